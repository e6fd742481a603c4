# The common variables this provider reads in its own way; the others are in
# ../common/common_variables.tf.

variable "image_name" {
  type        = string
  description = "Boot image as project/family or project/image, e.g. ubuntu-os-cloud/ubuntu-2204-lts."
}

variable "flavor_name" {
  type        = string
  description = "Machine type, e.g. e2-medium."
}

# Google Cloud. Credentials come from GOOGLE_CREDENTIALS (a key file's path or contents).

variable "project_id" {
  type        = string
  description = "Google Cloud project the VM is created in."
  default     = "usit-itf-naic-project"
}

variable "region" {
  type        = string
  description = "Google Cloud region."
  default     = "europe-north1"
}

variable "zone" {
  type        = string
  description = "Google Cloud zone, in region."
  default     = "europe-north1-a"
}

variable "disk_size" {
  type        = number
  description = "Boot disk size in GB."
  default     = 20
}

variable "subnet_cidr" {
  type        = string
  description = "Address range of the VM's own subnet."
  default     = "10.0.1.0/24"
}
