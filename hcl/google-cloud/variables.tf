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
  description = "Boot image as project/family or project/image, e.g. ubuntu-os-cloud/ubuntu-2204-lts."
}

variable "flavor_name" {
  type        = string
  description = "Machine type, e.g. e2-medium."
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
