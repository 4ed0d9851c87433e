//! Simulated GPU nodes.
