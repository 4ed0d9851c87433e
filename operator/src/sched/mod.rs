//! The scheduling core: a pure library, snapshot in, decisions out. No I/O.
