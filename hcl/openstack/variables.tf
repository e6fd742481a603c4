# The common variables this provider reads in its own way; the others are in
# ../common/common_variables.tf.

variable "image_name" {
  type        = string
  description = "Image to boot, in the provider's own naming (the template's image)."
}

variable "flavor_name" {
  type        = string
  description = "Size of the VM, in the provider's own naming (the template's flavor)."
}

# NREC (OpenStack). Credentials come from OS_USERNAME, OS_PASSWORD and OS_PROJECT_NAME; the
# region is the project's (project.tf).

variable "auth_url" {
  type        = string
  description = "Keystone endpoint of NREC."
  default     = "https://api.nrec.no:5000/v3"
}

variable "domain_name" {
  type        = string
  description = "Keystone user and project domain."
  default     = "dataporten"
}

variable "network_name" {
  type        = string
  description = "Network the VM is attached to."
  default     = "dualStack"
}
