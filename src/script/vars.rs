//! Variable names resolved to slots at parse time.
//!
//! Every `:name` in SQL, every variable in an expression and every target of
//! `\set`, `\gset` or `\setshell` is turned into a slot number when the
//! script is parsed. At run time a client keeps one value per slot, so the
//! engine never looks a name up while a benchmark runs.

use std::collections::HashMap;

/// The table of variable names shared by all scripts of a run.
#[derive(Debug, Default, Clone)]
pub struct VarNames {
    names: Vec<String>,
    slots: HashMap<String, usize>,
}

impl VarNames {
    pub fn new() -> Self {
        Self::default()
    }

    /// The slot of `name`, allocating a new one the first time it is seen.
    pub fn slot(&mut self, name: &str) -> usize {
        if let Some(&slot) = self.slots.get(name) {
            return slot;
        }
        let slot = self.names.len();
        self.names.push(name.to_owned());
        self.slots.insert(name.to_owned(), slot);
        slot
    }

    /// The slot of `name` if some script or definition uses it.
    pub fn lookup(&self, name: &str) -> Option<usize> {
        self.slots.get(name).copied()
    }

    /// The name behind a slot, for error messages.
    pub fn name(&self, slot: usize) -> &str {
        &self.names[slot]
    }

    /// How many slots exist; a client allocates this many values.
    pub fn len(&self) -> usize {
        self.names.len()
    }

    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }
}
