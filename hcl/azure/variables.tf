# The common variables this provider reads in its own way; the others are in
# ../common/common_variables.tf.

variable "image_name" {
  type        = string
  description = "Marketplace image as publisher:offer:sku:version, or an alias: Ubuntu-2204-lts, Ubuntu-2404-lts."

  validation {
    condition     = length(split(":", var.image_name)) == 4 || contains(["Ubuntu-2204-lts", "Ubuntu-2404-lts"], var.image_name)
    error_message = "The image_name must be publisher:offer:sku:version (e.g. Canonical:ubuntu-24_04-lts:server:latest) or one of Ubuntu-2204-lts, Ubuntu-2404-lts."
  }
}

variable "flavor_name" {
  type        = string
  description = "Azure VM size, e.g. Standard_F2."
}

# Azure. Credentials come from ARM_CLIENT_ID, ARM_CLIENT_SECRET, ARM_TENANT_ID and ARM_SUBSCRIPTION_ID.

variable "region" {
  type        = string
  description = "Azure location."
  default     = "Norway East"
}

variable "disk_size_gb" {
  type        = number
  description = "OS disk size in GB; null keeps the image's size."
  default     = null
}
