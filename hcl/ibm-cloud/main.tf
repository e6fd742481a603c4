# Credentials: IC_API_KEY from the runner's environment; the workspace is var.cloud_instance_id
# (TF_VAR_cloud_instance_id).
provider "ibm" {
  region = var.region
  zone   = var.zone
}

locals {
  # Power VS shapes of the catalog: shared processors.
  flavors = {
    "power11.small"  = { processors = 2, memory = 8, sys_type = "s1122" }
    "power11.medium" = { processors = 4, memory = 16, sys_type = "s1122" }
    "power11.large"  = { processors = 8, memory = 32, sys_type = "s1122" }
    "power10.small"  = { processors = 1, memory = 2, sys_type = "s1022" }
    "power10.medium" = { processors = 2, memory = 4, sys_type = "s1022" }
    "power10.large"  = { processors = 4, memory = 16, sys_type = "s1022" }
  }
  flavor = local.flavors[var.flavor_name]
}

data "ibm_pi_image" "vm" {
  pi_cloud_instance_id = var.cloud_instance_id
  pi_image_name        = var.image_name
}

resource "ibm_pi_key" "vm" {
  pi_cloud_instance_id = var.cloud_instance_id
  pi_key_name          = "${var.vm_id}-sshkey"
  pi_ssh_key           = var.public_key
}

resource "ibm_pi_network" "vm" {
  pi_cloud_instance_id = var.cloud_instance_id
  pi_network_name      = "${var.vm_id}-pub-net"
  pi_network_type      = "pub-vlan"
  pi_dns               = var.dns_servers
}

resource "ibm_pi_instance" "vm" {
  pi_cloud_instance_id = var.cloud_instance_id
  pi_instance_name     = var.vm_id
  pi_image_id          = data.ibm_pi_image.vm.id
  pi_key_pair_name     = ibm_pi_key.vm.pi_key_name
  pi_memory            = local.flavor.memory
  pi_processors        = local.flavor.processors
  pi_proc_type         = "shared"
  pi_sys_type          = local.flavor.sys_type
  pi_pin_policy        = "none"
  pi_health_status     = "WARNING"
  # Passed verbatim: the provider base64-encodes an unencoded string itself.
  pi_user_data = var.user_data

  pi_network {
    network_id = ibm_pi_network.vm.network_id
  }
}

# SSH and ICMP from allow_ssh_from_v4 only, with Power VS network security groups: a network
# address group holds the CIDRs, the security group's rules allow them, and the VM's address
# is the group's member (members get only what the rules allow). The workspace must have
# network security groups enabled (see ../README.md).
resource "ibm_pi_network_address_group" "ssh_from" {
  pi_cloud_instance_id = var.cloud_instance_id
  pi_name              = "${var.vm_id}-ssh-from"
}

resource "ibm_pi_network_address_group_member" "ssh_from" {
  for_each = toset(var.allow_ssh_from_v4)

  pi_cloud_instance_id        = var.cloud_instance_id
  pi_network_address_group_id = ibm_pi_network_address_group.ssh_from.network_address_group_id
  pi_cidr                     = each.value
}

resource "ibm_pi_network_security_group" "vm" {
  pi_cloud_instance_id = var.cloud_instance_id
  pi_name              = "${var.vm_id}-nsg"
}

resource "ibm_pi_network_security_group_rule" "ssh" {
  pi_cloud_instance_id         = var.cloud_instance_id
  pi_network_security_group_id = ibm_pi_network_security_group.vm.network_security_group_id
  pi_action                    = "allow"

  pi_protocol {
    type = "tcp"
  }

  pi_destination_port {
    minimum = 22
    maximum = 22
  }

  pi_remote {
    id   = ibm_pi_network_address_group.ssh_from.network_address_group_id
    type = "network-address-group"
  }

  depends_on = [ibm_pi_network_address_group_member.ssh_from]
}

resource "ibm_pi_network_security_group_rule" "icmp" {
  pi_cloud_instance_id         = var.cloud_instance_id
  pi_network_security_group_id = ibm_pi_network_security_group.vm.network_security_group_id
  pi_action                    = "allow"

  pi_protocol {
    type      = "icmp"
    icmp_type = "all"
  }

  pi_remote {
    id   = ibm_pi_network_address_group.ssh_from.network_address_group_id
    type = "network-address-group"
  }

  # One change of the security group at a time.
  depends_on = [ibm_pi_network_security_group_rule.ssh]
}

resource "ibm_pi_network_security_group_member" "vm" {
  pi_cloud_instance_id         = var.cloud_instance_id
  pi_network_security_group_id = ibm_pi_network_security_group.vm.network_security_group_id
  pi_type                      = "ipv4-address"
  pi_target                    = ibm_pi_instance.vm.pi_network[0].ip_address

  depends_on = [
    ibm_pi_network_security_group_rule.ssh,
    ibm_pi_network_security_group_rule.icmp,
  ]
}
