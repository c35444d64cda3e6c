"""The GPU worker image: Packer variables from the spec, the template's layout, the packer-py runner, the bake."""
