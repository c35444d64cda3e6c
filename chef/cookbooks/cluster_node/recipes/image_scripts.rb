# frozen_string_literal: true

# The GPU image's own scripts (packer/scripts, copied into files/ by `invoke chef-attributes`), in the image's
# order and with its environment; workers run them all, other servers only the common ones. Each script runs
# again only when its content or the versions change (the digest in its stamp file).
scripts = node['cluster_node']['image_scripts']
dir = node['cluster_node']['image_scripts_dir']
names = cluster_role?('worker') ? scripts['order'] : scripts['common']

directory dir do
  owner 'root'
  group 'root'
  mode '0700'
  recursive true
end

names.each do |name|
  path = ::File.join(dir, name)
  stamp = ::File.join(dir, ".#{name}.#{scripts['digests'][name]}.done")

  cookbook_file path do
    source "image_scripts/#{name}"
    owner 'root'
    group 'root'
    mode '0755'
  end

  execute "image script #{name}" do
    command ['/bin/bash', path]
    environment scripts['environment'].to_h
    live_stream true
    not_if { name != 'check.sh' && ::File.exist?(stamp) } # check.sh verifies on every run
    notifies :create, "file[#{stamp}]", :immediately unless name == 'check.sh'
  end

  next if name == 'check.sh'

  file stamp do
    content "#{name} applied with #{scripts['environment'].to_h.sort.map { |k, v| "#{k}=#{v}" }.join(' ')}\n"
    mode '0600'
    action :nothing
  end
end
