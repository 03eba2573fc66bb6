"""The cluster side of `draguard explain`: objects, pools, the allocator and scoring.

Upstream's structured-parameters allocator (kubernetes/dynamic-resource-allocation,
`structured/internal/stable`) and the scheduler plugin's scoring
(kubernetes/kubernetes `pkg/scheduler/framework/plugins/dynamicresources`) re-done
over plain Python values, per release.
"""
