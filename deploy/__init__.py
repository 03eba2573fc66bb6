"""Cluster manifests for draguard: the kustomize tree in this folder and its Python renderer.

`render.render(RenderOptions(...))` gives the objects of `overlays/self-signed` or
`overlays/cert-manager` for a namespace, image and replica count, the same as
`kubectl kustomize` (`kustomize` holds the subset of kustomize it needs);
`cli.main` is `draguard deploy render`. See README.md ("Install in a cluster").
"""
