# The common variables this provider reads in its own way; the others are in
# ../common/common_variables.tf.

variable "image_name" {
  type        = string
  description = "Image name of catalog.tf (e.g. ubuntu-24.04-amd-mi250-6.4.1) or an image id."
}

variable "flavor_name" {
  type        = string
  description = "Flavor name of catalog.tf (e.g. g.4.standard.40s) or a flavor id."
}

# Nscale. All four values come from TF_VAR_* variables of the runner's environment.

variable "nscale_service_token" {
  type        = string
  description = "Nscale service token (from TF_VAR_nscale_service_token)."
  sensitive   = true
}

variable "nscale_organization_id" {
  type        = string
  description = "Nscale organization id (from TF_VAR_nscale_organization_id)."
}

variable "nscale_project_id" {
  type        = string
  description = "Nscale project id (from TF_VAR_nscale_project_id)."
}

variable "region_id" {
  type        = string
  description = "Nscale region id (from TF_VAR_region_id)."
}

variable "endpoint" {
  type        = string
  description = "Nscale compute API endpoint."
  default     = "https://compute.nks.europe-west4.nscale.com"
}
