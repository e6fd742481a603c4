output "vm_ip" {
  description = "Public IPv4 address of the VM."
  value       = google_compute_instance.vm.network_interface[0].access_config[0].nat_ip
}

output "vm_provision_status" {
  description = "Final status reported to the service."
  value       = "PROVISIONING_COMPLETED"
  depends_on  = [google_compute_instance.vm]
}
