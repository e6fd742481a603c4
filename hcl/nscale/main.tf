# Credentials: the TF_VAR_nscale_* variables of the runner's environment.
provider "nscale" {
  endpoint        = var.endpoint
  organization_id = var.nscale_organization_id
  project_id      = var.nscale_project_id
  service_token   = var.nscale_service_token
}

# One workload pool of one machine: the VM.
resource "nscale_compute_cluster" "vm" {
  name      = "${var.vm_name}-${var.vm_id}"
  region_id = var.region_id

  workload_pools = [
    {
      name             = "default"
      replicas         = 1
      flavor_id        = lookup(local.flavor_ids, var.flavor_name, var.flavor_name)
      image_id         = lookup(local.image_ids, var.image_name, var.image_name)
      enable_public_ip = true
      # Sent base64-encoded, as the old system did (the compute service hands it to OpenStack).
      user_data = base64encode(var.user_data)

      # The pool's firewall admits only these rules; the API takes tcp and udp only (no ICMP).
      firewall_rules = [
        {
          direction = "ingress"
          protocol  = "tcp"
          ports     = "22"
          prefixes  = var.allow_ssh_from_v4
        }
      ]
    }
  ]
}
