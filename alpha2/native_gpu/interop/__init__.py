"""The interop room: the frame importer, its pairings (one module each) and the import leases."""
