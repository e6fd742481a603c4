-- The catalog of the old system (its data/vm_templates.sql), plus AWS and UpCloud, and what
-- the catalog's projection needs. These rows exist before the Catalog aggregate has any
-- event: the API imports them into it (a `SeedImported` event) before the first admin
-- command; see domain::catalog.
--
-- Tags: `simple` or `advanced` (the view that lists the template; the UI shows one at a
-- time), plus `gpu`, `bare-metal` and `jupyter-notebook` where they apply. cpu, ram_gb and
-- storage_gb are what users read; the flavor decides what they get.

-- Catalog events folded so far, for read-your-writes after an admin command.
CREATE TABLE catalog_projection
(
    id            boolean PRIMARY KEY DEFAULT true CHECK (id),
    last_sequence bigint  NOT NULL
);

INSERT INTO catalog_projection (id, last_sequence) VALUES (true, 0);

INSERT INTO providers (id, name, enabled, sort_order)
VALUES ('nscale', 'Nscale', true, 1),
       ('nrec-uio', 'NREC UiO', true, 2),
       ('nrec-uib', 'NREC UiB', true, 3),
       ('ibm-cloud', 'IBM Cloud', true, 4),
       ('google-cloud', 'Google Cloud', true, 5),
       ('azure', 'Azure', true, 6),
       ('nrec', 'NREC (Bergen)', true, 7),
       ('aws', 'AWS', true, 8),
       ('upcloud', 'UpCloud', true, 9);

INSERT INTO templates (provider_id, id, name, description, flavor_name, image_name, username,
                       cpu, ram_gb, storage_gb, gpu, tags, enabled, sort_order)
VALUES
-- Nscale: every template boots the AMD MI250 image and cloud-init creates naic-user.
('nscale', 'simple-standard-small', 'Standard Small', 'Two vCPUs and 4 GB of memory.',
 'g.small', 'ubuntu-24.04-amd-mi250-6.4.1', 'naic-user', 2, 4, 40, NULL, '{simple}', true, 1),
('nscale', 'simple-standard-medium', 'Standard Medium', 'Four vCPUs and 16 GB of memory.',
 'g.4.standard.40s', 'ubuntu-24.04-amd-mi250-6.4.1', 'naic-user', 4, 16, 40, NULL, '{simple}',
 true, 2),
('nscale', 'gpu-xl-mi250x', 'GPU Extra Large (4 x MI250X)',
 'A whole bare-metal server with four AMD Instinct MI250X GPUs, 128 vCPUs and 2 TB of memory.',
 'g.128.mi250x.8', 'ubuntu-24.04-amd-mi250-6.4.1', 'naic-user', 128, 2149, 30730,
 '4 x AMD Instinct MI250X', '{simple,gpu,bare-metal}', true, 3),
('nscale', 'standard-small', 'Standard Small', 'Two vCPUs and 4 GB of memory.',
 'g.small', 'ubuntu-24.04-amd-mi250-6.4.1', 'naic-user', 2, 4, 40, NULL, '{advanced}', true, 4),
('nscale', 'standard-medium', 'Standard Medium', 'Four vCPUs and 16 GB of memory.',
 'g.4.standard.40s', 'ubuntu-24.04-amd-mi250-6.4.1', 'naic-user', 4, 16, 40, NULL,
 '{advanced}', true, 5),
('nscale', 'standard-large', 'Standard Large', 'Sixteen vCPUs and 32 GB of memory.',
 'g.16.standard.40s', 'ubuntu-24.04-amd-mi250-6.4.1', 'naic-user', 16, 32, 40, NULL,
 '{advanced}', true, 6),
('nscale', 'standard-xl', 'Standard Extra Large', 'Sixteen vCPUs and 64 GB of memory.',
 'g.16.standard', 'ubuntu-24.04-amd-mi250-6.4.1', 'naic-user', 16, 64, 40, NULL, '{advanced}',
 true, 7),

-- NREC UiO (Oslo).
('nrec-uio', 'simple-standard-large', 'Standard Large', 'Two vCPUs and 8 GB of memory, Ubuntu 24.04.',
 'm1.large', 'GOLD Ubuntu 24.04 LTS', 'ubuntu', 2, 8, 20, NULL, '{simple}', true, 1),
('nrec-uio', 'simple-standard-large-jupyter', 'Standard Large with Jupyter Notebook',
 'Two vCPUs and 8 GB of memory, Ubuntu 24.04, with a Jupyter Notebook server on port 8008.',
 'm1.large', 'GOLD Ubuntu 24.04 LTS', 'ubuntu', 2, 8, 20, NULL, '{simple,jupyter-notebook}',
 true, 2),
('nrec-uio', 'gpu-xl-l40s', 'GPU Extra Large (1 x L40S)',
 'One NVIDIA L40S GPU, 16 vCPUs and 120 GB of memory.',
 'gr1.L40S.24g.4xlarge', 'vGPU Ubuntu 24.04 LTS', 'ubuntu', 16, 120, 100, '1 x NVIDIA L40S',
 '{simple,advanced,gpu}', true, 3),
('nrec-uio', 'standard-medium', 'Standard Medium', 'One vCPU and 4 GB of memory, Ubuntu 24.04.',
 'm1.medium', 'GOLD Ubuntu 24.04 LTS', 'ubuntu', 1, 4, 20, NULL, '{advanced}', true, 4),
('nrec-uio', 'standard-large', 'Standard Large', 'Two vCPUs and 8 GB of memory, CentOS Stream 10.',
 'm1.large', 'GOLD CentOS Stream 10', 'cloud-user', 2, 8, 20, NULL, '{advanced}', true, 5),
('nrec-uio', 'standard-xl', 'Standard Extra Large',
 'Four vCPUs and 16 GB of memory, CentOS Stream 10.',
 'm1.xlarge', 'GOLD CentOS Stream 10', 'cloud-user', 4, 16, 20, NULL, '{advanced}', true, 6),

-- NREC UiB (Bergen): the advanced GPU template is disabled, the simple one is not.
('nrec-uib', 'simple-standard-large', 'Standard Large', 'Two vCPUs and 8 GB of memory, Ubuntu 24.04.',
 'm1.large', 'GOLD Ubuntu 24.04 LTS', 'ubuntu', 2, 8, 20, NULL, '{simple}', true, 1),
('nrec-uib', 'simple-gpu-xl-l40s', 'GPU Extra Large (1 x L40S)',
 'One NVIDIA L40S GPU, 16 vCPUs and 120 GB of memory.',
 'gr1.L40S.24g.4xlarge', 'vGPU Ubuntu 24.04 LTS', 'ubuntu', 16, 120, 100, '1 x NVIDIA L40S',
 '{simple,gpu}', true, 2),
('nrec-uib', 'standard-medium', 'Standard Medium', 'One vCPU and 4 GB of memory, Ubuntu 24.04.',
 'm1.medium', 'GOLD Ubuntu 24.04 LTS', 'ubuntu', 1, 4, 20, NULL, '{advanced}', true, 3),
('nrec-uib', 'standard-large', 'Standard Large', 'Two vCPUs and 8 GB of memory, CentOS Stream 10.',
 'm1.large', 'GOLD CentOS Stream 10', 'cloud-user', 2, 8, 20, NULL, '{advanced}', true, 4),
('nrec-uib', 'standard-xl', 'Standard Extra Large',
 'Four vCPUs and 16 GB of memory, CentOS Stream 10.',
 'm1.xlarge', 'GOLD CentOS Stream 10', 'cloud-user', 4, 16, 20, NULL, '{advanced}', true, 5),
('nrec-uib', 'gpu-xl-l40s', 'GPU Extra Large (1 x L40S)',
 'One NVIDIA L40S GPU, 16 vCPUs and 120 GB of memory.',
 'gr1.L40S.24g.4xlarge', 'vGPU Ubuntu 24.04 LTS', 'ubuntu', 16, 120, 100, '1 x NVIDIA L40S',
 '{advanced,gpu}', false, 6),

-- IBM Cloud Power Virtual Server: CentOS Stream 10 as root.
('ibm-cloud', 'simple-power11-medium', 'Power 11 Medium', 'IBM Power11, four cores and 16 GB of memory.',
 'power11.medium', 'CentOS-Stream-10', 'root', 4, 16, 120, NULL, '{simple}', true, 1),
('ibm-cloud', 'simple-power10-medium', 'Power 10 Medium', 'IBM Power10, two cores and 4 GB of memory.',
 'power10.medium', 'CentOS-Stream-10', 'root', 2, 4, 120, NULL, '{simple}', true, 2),
('ibm-cloud', 'power11-small', 'Power 11 Small', 'IBM Power11, two cores and 8 GB of memory.',
 'power11.small', 'CentOS-Stream-10', 'root', 2, 8, 120, NULL, '{advanced}', true, 3),
('ibm-cloud', 'power11-medium', 'Power 11 Medium', 'IBM Power11, four cores and 16 GB of memory.',
 'power11.medium', 'CentOS-Stream-10', 'root', 4, 16, 120, NULL, '{advanced}', true, 4),
('ibm-cloud', 'power11-large', 'Power 11 Large', 'IBM Power11, eight cores and 32 GB of memory.',
 'power11.large', 'CentOS-Stream-10', 'root', 8, 32, 120, NULL, '{advanced}', true, 5),
('ibm-cloud', 'power10-small', 'Power 10 Small', 'IBM Power10, one core and 2 GB of memory.',
 'power10.small', 'CentOS-Stream-10', 'root', 1, 2, 120, NULL, '{advanced}', true, 6),
('ibm-cloud', 'power10-medium', 'Power 10 Medium', 'IBM Power10, two cores and 4 GB of memory.',
 'power10.medium', 'CentOS-Stream-10', 'root', 2, 4, 120, NULL, '{advanced}', true, 7),
('ibm-cloud', 'power10-large', 'Power 10 Large', 'IBM Power10, four cores and 16 GB of memory.',
 'power10.large', 'CentOS-Stream-10', 'root', 4, 16, 120, NULL, '{advanced}', true, 8),

-- Google Cloud. The old "Extra Large" description said it had a GPU; it has none.
('google-cloud', 'simple-standard-large', 'Standard Large', 'Two vCPUs and 8 GB of memory.',
 'n2-standard-2', 'ubuntu-os-cloud/ubuntu-2204-lts', 'naic-user', 2, 8, 20, NULL, '{simple}',
 true, 1),
('google-cloud', 'simple-standard-xl', 'Standard Extra Large',
 'Four compute-optimized vCPUs and 16 GB of memory (no GPU).',
 'c2-standard-4', 'ubuntu-os-cloud/ubuntu-2204-lts', 'naic-user', 4, 16, 20, NULL, '{simple}',
 true, 2),
('google-cloud', 'standard-medium', 'Standard Medium', 'Two shared vCPUs and 4 GB of memory.',
 'e2-medium', 'ubuntu-os-cloud/ubuntu-2204-lts', 'naic-user', 2, 4, 20, NULL, '{advanced}',
 true, 3),
('google-cloud', 'standard-large', 'Standard Large', 'Two vCPUs and 8 GB of memory.',
 'n2-standard-2', 'ubuntu-os-cloud/ubuntu-2204-lts', 'naic-user', 2, 8, 20, NULL, '{advanced}',
 true, 4),
('google-cloud', 'standard-xl', 'Standard Extra Large',
 'Four compute-optimized vCPUs and 16 GB of memory (no GPU).',
 'c2-standard-4', 'ubuntu-os-cloud/ubuntu-2204-lts', 'naic-user', 4, 16, 20, NULL, '{advanced}',
 true, 5),

-- Azure. The old rows showed 8 and 16 GB; Standard_F2 and Standard_F4 have 4 and 8 GiB.
('azure', 'standard-medium', 'Standard Medium', 'Two vCPUs and 4 GB of memory.',
 'Standard_F2', 'Ubuntu-2204-lts', 'naic-user', 2, 4, 50, NULL, '{simple}', true, 1),
('azure', 'standard-large', 'Standard Large', 'Four vCPUs and 8 GB of memory.',
 'Standard_F4', 'Ubuntu-2204-lts', 'naic-user', 4, 8, 100, NULL, '{advanced}', true, 2),

-- NREC (the Bergen project). The advanced GPU Extra Large is disabled.
('nrec', 'simple-standard-large', 'Standard Large', 'Two vCPUs and 8 GB of memory, Ubuntu 22.04.',
 'm1.large', 'GOLD Ubuntu 22.04 LTS', 'ubuntu', 2, 8, 20, NULL, '{simple}', true, 1),
('nrec', 'simple-gpu-large', 'GPU Large', 'An NVIDIA virtual GPU, two vCPUs and 8 GB of memory.',
 'vgpu.m1.large', 'vGPU Ubuntu 22.04 LTS', 'ubuntu', 2, 8, 20, '1 x NVIDIA vGPU', '{simple,gpu}',
 true, 2),
('nrec', 'standard-medium', 'Standard Medium', 'One vCPU and 4 GB of memory, Ubuntu 22.04.',
 'm1.medium', 'GOLD Ubuntu 22.04 LTS', 'ubuntu', 1, 4, 20, NULL, '{advanced}', true, 3),
('nrec', 'standard-large', 'Standard Large', 'Two vCPUs and 8 GB of memory, CentOS Stream 9.',
 'm1.large', 'GOLD CentOS Stream 9', 'cloud-user', 2, 8, 20, NULL, '{advanced}', true, 4),
('nrec', 'standard-xl', 'Standard Extra Large', 'Four vCPUs and 16 GB of memory, CentOS Stream 9.',
 'm1.xlarge', 'GOLD CentOS Stream 9', 'cloud-user', 4, 16, 20, NULL, '{advanced}', true, 5),
('nrec', 'gpu-large', 'GPU Large', 'An NVIDIA virtual GPU, two vCPUs and 8 GB of memory.',
 'vgpu.m1.large', 'vGPU Ubuntu 22.04 LTS', 'ubuntu', 2, 8, 20, '1 x NVIDIA vGPU',
 '{advanced,gpu}', true, 6),
('nrec', 'gpu-xl', 'GPU Extra Large', 'An NVIDIA virtual GPU, four vCPUs and 16 GB of memory.',
 'vgpu.m1.xlarge', 'vGPU Ubuntu 22.04 LTS', 'ubuntu', 4, 16, 20, '1 x NVIDIA vGPU',
 '{advanced,gpu}', false, 7),

-- AWS: Canonical's Ubuntu 24.04 AMI (newest of the name pattern); the GPU template uses
-- AWS's Ubuntu 24.04 Deep Learning Base AMI, which has the NVIDIA driver.
('aws', 'standard-medium', 'Standard Medium', 'Two burstable vCPUs and 4 GB of memory.',
 't3.medium', 'ubuntu/images/hvm-ssd-gp3/ubuntu-noble-24.04-amd64-server-*', 'ubuntu', 2, 4, 20,
 NULL, '{simple,advanced}', true, 1),
('aws', 'standard-large', 'Standard Large', 'Two burstable vCPUs and 8 GB of memory.',
 't3.large', 'ubuntu/images/hvm-ssd-gp3/ubuntu-noble-24.04-amd64-server-*', 'ubuntu', 2, 8, 40,
 NULL, '{simple,advanced}', true, 2),
('aws', 'gpu-xl-a10g', 'GPU Extra Large (1 x A10G)',
 'One NVIDIA A10G GPU (24 GB), four vCPUs and 16 GB of memory.',
 'g5.xlarge', 'Deep Learning Base OSS Nvidia Driver GPU AMI (Ubuntu 24.04) *', 'ubuntu', 4, 16,
 100, '1 x NVIDIA A10G', '{advanced,gpu}', true, 3),

-- UpCloud: general purpose plans with Ubuntu 24.04.
('upcloud', 'standard-small', 'Standard Small', 'One vCPU and 2 GB of memory.',
 '1xCPU-2GB', 'Ubuntu Server 24.04 LTS (Noble Numbat)', 'ubuntu', 1, 2, 50, NULL,
 '{simple,advanced}', true, 1),
('upcloud', 'standard-medium', 'Standard Medium', 'Two vCPUs and 4 GB of memory.',
 '2xCPU-4GB', 'Ubuntu Server 24.04 LTS (Noble Numbat)', 'ubuntu', 2, 4, 80, NULL,
 '{simple,advanced}', true, 2),
('upcloud', 'standard-large', 'Standard Large', 'Four vCPUs and 8 GB of memory.',
 '4xCPU-8GB', 'Ubuntu Server 24.04 LTS (Noble Numbat)', 'ubuntu', 4, 8, 160, NULL,
 '{advanced}', true, 3);
