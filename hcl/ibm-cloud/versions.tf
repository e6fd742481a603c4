# The service adds backend.tf (Terraform's pg backend); no backend block here.
terraform {
  required_version = ">= 1.0.0"

  required_providers {
    # 1.71 introduced the Power VS network security groups; 1.76 added pi_destination_port.
    ibm = {
      source  = "IBM-Cloud/ibm"
      version = "~> 1.76.0"
    }
  }
}
