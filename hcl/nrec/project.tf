# The NREC Bergen project: what sets this project apart; the rest is ../openstack, copied into the same
# working directory.

variable "region" {
  type        = string
  description = "NREC region."
  default     = "bgo"
}

locals {
  # tcp ports opened to allow_ssh_from_v4: SSH.
  tcp_ports                  = [22]
  security_group_description = "SSH and ICMP from the VM's allowed CIDRs."
}
