# The common variables this provider reads in its own way; the others are in
# ../common/common_variables.tf.

variable "image_name" {
  type        = string
  description = "Image to boot (informational for the local provider)."
}

variable "flavor_name" {
  type        = string
  description = "Size of the VM: local.small, local.medium or local.large."

  validation {
    condition     = contains(["local.small", "local.medium", "local.large"], var.flavor_name)
    error_message = "The flavor_name must be one of local.small, local.medium, local.large."
  }
}


variable "address_epoch" {
  description = "Not set by the platform: a change made outside Terraform (TF_VAR_address_epoch) that moves the VM's address, for refresh."
  type        = number
  default     = 0
}

variable "address" {
  description = "Not set by the platform: an address given from outside (TF_VAR_address) that is the VM's vm_ip instead of the derived one, so install jobs can reach a real SSH server in tests."
  type        = string
  default     = ""
}
