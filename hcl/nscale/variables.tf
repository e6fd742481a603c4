# Common variables: every provider folder declares exactly these (see ../README.md).
# The service writes them to terraform.tfvars.json.

variable "vm_id" {
  type        = string
  description = "UUID of the VM (the Provisioning aggregate id)."

  validation {
    condition     = can(regex("^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$", var.vm_id))
    error_message = "The vm_id must be a UUID."
  }
}

variable "vm_name" {
  type        = string
  description = "Name of the VM: 1 to 63 characters of [a-z0-9-], starting with a letter."
}

variable "public_key" {
  type        = string
  description = "OpenSSH public key installed for the login user."
}

variable "image_name" {
  type        = string
  description = "Image name of catalog.tf (e.g. ubuntu-24.04-amd-mi250-6.4.1) or an image id."
}

variable "flavor_name" {
  type        = string
  description = "Flavor name of catalog.tf (e.g. g.4.standard.40s) or a flavor id."
}

variable "allow_ssh_from_v4" {
  type        = list(string)
  description = "IPv4 CIDR blocks allowed to reach the VM on tcp/22; nothing else may."

  validation {
    condition     = length(var.allow_ssh_from_v4) > 0 && alltrue([for cidr in var.allow_ssh_from_v4 : can(cidrhost(cidr, 0))])
    error_message = "The allow_ssh_from_v4 list must hold at least one CIDR block, e.g. 192.0.2.0/24."
  }
}

variable "username" {
  type        = string
  description = "Login user of the VM."
}

variable "user_data" {
  type        = string
  description = "The cloud-init document rendered by the service, passed to the VM verbatim."
}

variable "boot_callback_url" {
  type        = string
  description = "URL the VM calls when it starts booting (already inside user_data); empty for none."
  default     = ""
}

variable "phone_home_url" {
  type        = string
  description = "URL the VM calls when cloud-init has finished (already inside user_data); empty for none."
  default     = ""
}

variable "duration_hours" {
  type        = number
  description = "Lifetime of the VM in hours; the service destroys it when it expires."
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
