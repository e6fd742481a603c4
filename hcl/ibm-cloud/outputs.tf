output "vm_ip" {
  description = "Public IPv4 address of the VM."
  value       = ibm_pi_instance.vm.pi_network[0].external_ip
}

output "vm_provision_status" {
  description = "Final status reported to the service."
  value       = "PROVISIONING_COMPLETED"
  depends_on  = [ibm_pi_instance.vm, ibm_pi_network_security_group_member.vm]
}
