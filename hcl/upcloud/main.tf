# Credentials: UPCLOUD_USERNAME and UPCLOUD_PASSWORD from the runner's environment.
provider "upcloud" {}

locals {
  # The firewall takes address ranges, not CIDRs.
  ssh_ranges = [
    for cidr in var.allow_ssh_from_v4 : {
      start = cidrhost(cidr, 0)
      end   = cidrhost(cidr, pow(2, 32 - tonumber(split("/", cidr)[1])) - 1)
    }
  ]
}

resource "upcloud_server" "vm" {
  hostname = var.vm_name
  title    = "${var.vm_name}-${var.vm_id}"
  zone     = var.zone
  plan     = var.flavor_name
  firewall = true
  # Cloud-init templates read user_data from the metadata service.
  metadata  = true
  user_data = var.user_data

  labels = {
    env   = "naic-vm"
    vm_id = var.vm_id
  }

  template {
    storage = var.image_name
    size    = var.disk_size_gb
  }

  network_interface {
    type              = "public"
    ip_address_family = "IPv4"
  }

  login {
    user              = var.username
    keys              = [var.public_key]
    create_password   = false
    password_delivery = "none"
  }
}

# The UpCloud firewall is stateless: replies to the VM's own connections (to ephemeral ports)
# and DHCP must be let in explicitly. Everything else inbound is dropped, but for SSH and ICMP
# from allow_ssh_from_v4.
resource "upcloud_firewall_rules" "vm" {
  server_id = upcloud_server.vm.id

  dynamic "firewall_rule" {
    for_each = local.ssh_ranges
    content {
      action                 = "accept"
      comment                = "SSH"
      direction              = "in"
      family                 = "IPv4"
      protocol               = "tcp"
      source_address_start   = firewall_rule.value.start
      source_address_end     = firewall_rule.value.end
      destination_port_start = "22"
      destination_port_end   = "22"
    }
  }

  dynamic "firewall_rule" {
    for_each = local.ssh_ranges
    content {
      action               = "accept"
      comment              = "ICMP"
      direction            = "in"
      family               = "IPv4"
      protocol             = "icmp"
      source_address_start = firewall_rule.value.start
      source_address_end   = firewall_rule.value.end
    }
  }

  firewall_rule {
    action                 = "accept"
    comment                = "Replies to the VM's TCP connections"
    direction              = "in"
    family                 = "IPv4"
    protocol               = "tcp"
    destination_port_start = "32768"
    destination_port_end   = "60999"
  }

  firewall_rule {
    action                 = "accept"
    comment                = "Replies to the VM's UDP queries (DNS, NTP)"
    direction              = "in"
    family                 = "IPv4"
    protocol               = "udp"
    destination_port_start = "32768"
    destination_port_end   = "60999"
  }

  firewall_rule {
    action                 = "accept"
    comment                = "DHCP"
    direction              = "in"
    family                 = "IPv4"
    protocol               = "udp"
    source_port_start      = "67"
    source_port_end        = "67"
    destination_port_start = "68"
    destination_port_end   = "68"
  }

  firewall_rule {
    action    = "drop"
    comment   = "Default: drop other inbound traffic"
    direction = "in"
  }

  firewall_rule {
    action    = "accept"
    comment   = "Default: allow outbound traffic"
    direction = "out"
  }
}
