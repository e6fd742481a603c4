# The common variables every provider shares, word for word; the dispatcher writes them to
# terraform.tfvars.json. Every provider's folders are copied flat after this one into the job's
# working directory (see ../README.md). image_name and flavor_name, common too, are declared
# by each provider, since their meaning and checks are the provider's own.

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
  description = "Host name of the VM, derived from its display name: 1 to 63 characters of [a-z0-9-], starting with a letter."
}

variable "public_key" {
  type        = string
  description = "OpenSSH public key installed for the login user."
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
