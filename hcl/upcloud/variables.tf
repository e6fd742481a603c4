# The common variables this provider reads in its own way; the others are in
# ../common/common_variables.tf.

variable "image_name" {
  type        = string
  description = "Template storage name or UUID, e.g. Ubuntu Server 24.04 LTS (Noble Numbat)."
}

variable "flavor_name" {
  type        = string
  description = "Server plan, e.g. 2xCPU-4GB."
}

# UpCloud. Credentials come from UPCLOUD_USERNAME and UPCLOUD_PASSWORD.

variable "zone" {
  type        = string
  description = "UpCloud zone."
  default     = "de-fra1"
}

variable "disk_size_gb" {
  type        = number
  description = "Size of the system disk in GB."
  default     = 25
}
