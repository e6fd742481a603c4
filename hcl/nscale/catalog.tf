# Nscale flavor and image ids by catalog name. flavor_name and image_name may also be ids
# themselves (anything not listed here is passed through).
locals {
  flavor_ids = {
    "g.small"           = "000c2726-4988-4cc9-b8ef-cfee4865d988" # 2 vCPU, 4 GB, 40 GB
    "g.2.standard"      = "7df10e29-165c-42c8-93a1-5ae952982cf7" # 2 vCPU, 8 GB, 20 GB
    "g.4.standard.40s"  = "6c57396b-dedb-4492-a7e1-9c50c3c74581" # 4 vCPU, 16 GB, 40 GB
    "g.4.standard.80s"  = "f380a44e-6ec4-4f3d-a317-2e1791c1a26c" # 4 vCPU, 16 GB, 80 GB
    "g.8.standard.40s"  = "d4a9efff-0f3d-4ecb-a606-fcdb3a00caa3" # 8 vCPU, 32 GB, 40 GB
    "g.16.standard.40s" = "cbaa64d9-1a21-4357-8e9d-69a6c82e2fb5" # 16 vCPU, 32 GB, 40 GB
    "g.16.standard"     = "751151eb-5522-414b-8560-7d358de2c900" # 16 vCPU, 64 GB, 40 GB
    "g.22.h200.1"       = "1d9e96bf-4f0f-40dd-93ea-205f293eaf77" # 22 vCPU, 247 GB, 1x H200
    "g.128.mi250x.8"    = "ec2b3442-78a7-42fd-87e8-ed9b7754e95d" # bare metal, 4x MI250X
    "g.192.h200.8"      = "6e5986dc-d1b1-4247-bfcd-e4e1ff345f77" # bare metal, 8x H200
  }

  image_ids = {
    "ubuntu-24.04-nvidia-h200-575.51.03" = "fbdbc028-3bbe-440f-961f-f1f87ad3a6d5"
    "ubuntu-24.04-nvidia-h200-580.82.07" = "68e8d157-8948-4c6c-8251-37c45f541e30"
    "ubuntu-22.04-nvidia-h200-575.51.03" = "2948d409-3e53-4f85-b7b4-8eafab23a230"
    "ubuntu-22.04-nvidia-h200-580.82.07" = "c780a01b-53dc-4820-9ff6-3927c9b4221d"
    "ubuntu-24.04-amd-mi250-6.4.1"       = "f7a30975-890e-4daa-9167-4d9037a8e160"
    "ubuntu-22.04-amd-mi250-6.4.1"       = "6d07fe68-7e10-42ba-8e0a-3d0b97232126"
  }
}
