# frozen_string_literal: true

name 'cluster_node'
maintainer 'Research cluster infrastructure'
maintainer_email 'infra@research.internal'
license 'Apache-2.0'
description 'Physical GPU servers of the research cluster: the GPU image scripts, NFS, users, strongSwan, kubeadm join'
version '0.1.0'
chef_version '>= 17.0'
supports 'ubuntu', '>= 20.04'
