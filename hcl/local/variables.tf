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
  description = "Human-readable name of the VM."
}

variable "public_key" {
  type        = string
  description = "SSH public key installed for the login user."
}

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

variable "allow_ssh_from_v4" {
  type        = list(string)
  description = "IPv4 CIDR blocks allowed to reach port 22."

  validation {
    condition     = alltrue([for cidr in var.allow_ssh_from_v4 : can(cidrhost(cidr, 0))])
    error_message = "Every element of allow_ssh_from_v4 must be a CIDR block, e.g. 192.0.2.0/24."
  }
}

variable "username" {
  type        = string
  description = "Login user created on the VM."
  default     = "ubuntu"
}

variable "duration_hours" {
  type        = number
  description = "Lifetime of the VM in hours before it expires."
}

variable "callback_url" {
  type        = string
  description = "URL the VM calls when it has booted; empty for none."
  default     = ""
}
