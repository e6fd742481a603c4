# The common variables this provider reads in its own way; the others are in
# ../common/common_variables.tf.

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
