# The service adds backend.tf (Terraform's pg backend); no backend block here.
terraform {
  required_version = ">= 1.0.0"

  required_providers {
    # Pinned exactly: the nscale_compute_cluster schema used here is the one of 0.0.2.
    nscale = {
      source  = "nscaledev/nscale"
      version = "0.0.2"
    }
  }
}
