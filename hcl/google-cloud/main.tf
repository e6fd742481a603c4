# Credentials: GOOGLE_CREDENTIALS (a service account key file's path or contents) from the
# runner's environment.
provider "google" {
  project = var.project_id
  region  = var.region
  zone    = var.zone
}

locals {
  name = "naic-vm-${lower(var.vm_id)}"
}

resource "google_compute_network" "vm" {
  name                    = "${local.name}-vpc-network"
  auto_create_subnetworks = false
}

resource "google_compute_subnetwork" "vm" {
  name          = "${local.name}-subnet"
  ip_cidr_range = var.subnet_cidr
  region        = var.region
  network       = google_compute_network.vm.id
}

# The VM's network is its own, so nothing reaches it but what this rule allows.
resource "google_compute_firewall" "ssh_icmp" {
  name          = "${local.name}-allow-ssh-icmp"
  network       = google_compute_network.vm.name
  direction     = "INGRESS"
  source_ranges = var.allow_ssh_from_v4
  target_tags   = [local.name]

  allow {
    protocol = "tcp"
    ports    = ["22"]
  }

  allow {
    protocol = "icmp"
  }
}

resource "google_compute_instance" "vm" {
  name         = local.name
  machine_type = var.flavor_name
  zone         = var.zone
  tags         = [local.name]

  labels = {
    env   = "naic-vm"
    vm_id = lower(var.vm_id)
  }

  boot_disk {
    initialize_params {
      image = var.image_name
      size  = var.disk_size
    }
  }

  network_interface {
    subnetwork = google_compute_subnetwork.vm.id

    # An ephemeral external IPv4 address.
    access_config {}
  }

  metadata = {
    ssh-keys  = "${var.username}:${var.public_key}"
    user-data = var.user_data
  }

  depends_on = [google_compute_firewall.ssh_icmp]
}
