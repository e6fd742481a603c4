output "vm_ip" {
  description = "Private IPv4 address of the VM (deterministic from vm_id)."
  value       = local.vm_ip
}

output "vm_provision_status" {
  description = "Final status reported to the service."
  value       = "PROVISIONING_COMPLETED"
}
