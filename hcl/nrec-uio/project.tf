# The NREC UiO project: what sets this project apart; the rest is ../openstack, copied into the same
# working directory.

variable "region" {
  type        = string
  description = "NREC region."
  default     = "osl"
}

locals {
  # tcp ports opened to allow_ssh_from_v4: SSH and Jupyter (tcp/8008).
  tcp_ports                  = [22, 8008]
  security_group_description = "SSH, Jupyter (8008) and ICMP from the VM's allowed CIDRs."
}
