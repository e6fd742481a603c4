output "vm_ip" {
  description = "Public IPv4 address of the VM."
  value       = upcloud_server.vm.network_interface[0].ip_address
}

output "vm_provision_status" {
  description = "Final status reported to the service."
  value       = "PROVISIONING_COMPLETED"
  depends_on  = [upcloud_server.vm, upcloud_firewall_rules.vm]
}
