# The common variables this provider reads in its own way; the others are in
# ../common/common_variables.tf.

variable "image_name" {
  type        = string
  description = "AMI id (ami-...) or AMI name pattern, e.g. ubuntu/images/hvm-ssd-gp3/ubuntu-noble-24.04-amd64-server-*."
}

variable "flavor_name" {
  type        = string
  description = "EC2 instance type, e.g. t3.medium."
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
