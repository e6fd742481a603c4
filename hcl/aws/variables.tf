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
  description = "AMI id (ami-...) or AMI name pattern, e.g. ubuntu/images/hvm-ssd-gp3/ubuntu-noble-24.04-amd64-server-*."
}

variable "flavor_name" {
  type        = string
  description = "EC2 instance type, e.g. t3.medium."
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

# AWS. Credentials come from AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY.

variable "region" {
  type        = string
  description = "AWS region."
  default     = "eu-west-1"
}

variable "subnet_id" {
  type        = string
  description = "Subnet to start the VM in; empty for a default subnet of the default VPC."
  default     = ""
}

variable "ami_owners" {
  type        = list(string)
  description = "Owners searched when image_name is an AMI name rather than an ami-... id (Canonical, Amazon, Debian)."
  default     = ["099720109477", "amazon", "136693071363"]
}

variable "disk_size_gb" {
  type        = number
  description = "Root volume size in GB."
  default     = 20
}
