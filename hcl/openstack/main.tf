# An NREC (OpenStack) VM. A project's folder (../nrec, ../nrec-uio, ../nrec-uib) adds
# project.tf, which sets what differs: the region default, local.tcp_ports and
# local.security_group_description. Both are copied flat into one working directory.

# Credentials: OS_USERNAME, OS_PASSWORD and OS_PROJECT_NAME from the runner's environment.
provider "openstack" {
  auth_url            = var.auth_url
  user_domain_name    = var.domain_name
  project_domain_name = var.domain_name
  region              = var.region
}

locals {
  name = "${var.vm_name}-${var.vm_id}"
  # The project's tcp ports (project.tf), each opened to every CIDR of allow_ssh_from_v4.
  tcp_rules = { for pair in setproduct(local.tcp_ports, var.allow_ssh_from_v4) : "${pair[0]}-${pair[1]}" => { port = pair[0], cidr = pair[1] } }
}

resource "openstack_compute_keypair_v2" "vm" {
  name       = "${local.name}-kp"
  public_key = var.public_key
}

resource "openstack_networking_secgroup_v2" "vm" {
  name        = "${local.name}-ssh-icmp"
  description = local.security_group_description
}

resource "openstack_networking_secgroup_rule_v2" "tcp" {
  for_each = local.tcp_rules

  security_group_id = openstack_networking_secgroup_v2.vm.id
  direction         = "ingress"
  ethertype         = "IPv4"
  protocol          = "tcp"
  port_range_min    = each.value.port
  port_range_max    = each.value.port
  remote_ip_prefix  = each.value.cidr
}

resource "openstack_networking_secgroup_rule_v2" "icmp" {
  for_each = toset(var.allow_ssh_from_v4)

  security_group_id = openstack_networking_secgroup_v2.vm.id
  direction         = "ingress"
  ethertype         = "IPv4"
  protocol          = "icmp"
  remote_ip_prefix  = each.value
}

resource "openstack_compute_instance_v2" "vm" {
  name            = local.name
  image_name      = var.image_name
  flavor_name     = var.flavor_name
  key_pair        = openstack_compute_keypair_v2.vm.name
  security_groups = ["default", openstack_networking_secgroup_v2.vm.name]
  # The provider base64-encodes user_data itself.
  user_data = var.user_data

  metadata = {
    vm_id = var.vm_id
  }

  network {
    name = var.network_name
  }

  # The rules exist before the VM boots and starts calling back.
  depends_on = [
    openstack_networking_secgroup_rule_v2.tcp,
    openstack_networking_secgroup_rule_v2.icmp,
  ]
}
