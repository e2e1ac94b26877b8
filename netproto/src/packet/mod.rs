//! Packet endpoint: sequence numbers, acks, fragmentation (byte-compatible with `reliable`).
