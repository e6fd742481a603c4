output "vm_ip" {
  description = "Public IPv4 address of the VM."
  value       = aws_instance.vm.public_ip
}

output "vm_provision_status" {
  description = "Final status reported to the service."
  value       = "PROVISIONING_COMPLETED"
  depends_on  = [aws_instance.vm]
}
