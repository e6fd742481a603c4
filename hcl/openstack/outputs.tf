output "vm_ip" {
  description = "Public IPv4 address of the VM."
  value       = openstack_compute_instance_v2.vm.access_ip_v4
}

output "vm_provision_status" {
  description = "Final status reported to the service."
  value       = "PROVISIONING_COMPLETED"
  depends_on  = [openstack_compute_instance_v2.vm]
}
