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
  description = "Name of an image of the workspace, e.g. CentOS-Stream-10."
}

variable "flavor_name" {
  type        = string
  description = "Size of the VM: power11.small|medium|large (s1122) or power10.small|medium|large (s1022)."

  validation {
    condition     = contains(["power11.small", "power11.medium", "power11.large", "power10.small", "power10.medium", "power10.large"], var.flavor_name)
    error_message = "The flavor_name must be one of power11.small, power11.medium, power11.large, power10.small, power10.medium, power10.large."
  }
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

# IBM Cloud Power Virtual Server. IC_API_KEY authenticates; TF_VAR_cloud_instance_id names the workspace.

variable "cloud_instance_id" {
  type        = string
  description = "GUID of the Power Virtual Server workspace (from TF_VAR_cloud_instance_id)."
}

variable "region" {
  type        = string
  description = "IBM Cloud region of the workspace."
  default     = "eu-de"
}

variable "zone" {
  type        = string
  description = "IBM Cloud zone of the workspace."
  default     = "eu-de-1"
}

variable "dns_servers" {
  type        = list(string)
  description = "DNS servers of the VM's public network."
  default     = ["9.9.9.9"]
}
