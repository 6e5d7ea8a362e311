"""The device room: Vulkan adapter candidates, the shared Vulkan device, timeline semaphores,
submission probes and the GPU wait bound."""
