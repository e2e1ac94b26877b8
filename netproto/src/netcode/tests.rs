//! Unit tests of the netcode wire layer.
