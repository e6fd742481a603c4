output "vm_ip" {
  description = "Public IPv4 address of the VM."
  value       = nscale_compute_cluster.vm.workload_pools[0].machines[0].public_ip
}

output "vm_provision_status" {
  description = "Final status reported to the service."
  value       = "PROVISIONING_COMPLETED"
  depends_on  = [nscale_compute_cluster.vm]
}
