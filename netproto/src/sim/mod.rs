//! A deterministic, seeded network simulator on virtual time.
