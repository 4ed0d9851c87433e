//! Typed indices for one cycle's tables: a VirtualCluster, a queue, a node, a GPU type, a
//! job of the snapshot, a running job. Each is a position in the vector it was made for, and
//! [`IdVec`] is indexed by its own kind only, so a queue index cannot pick a VirtualCluster.

use std::fmt;
use std::marker::PhantomData;
use std::ops::{Index, IndexMut};

use super::model::{Job, Queue, Snapshot};

/// A typed position.
pub(crate) trait Id: Copy + Ord {
    fn new(i: usize) -> Self;
    /// Position in the vectors of its kind.
    fn ix(self) -> usize;
}

macro_rules! id {
    ($(#[$doc:meta])* $name:ident($repr:ty)) => {
        $(#[$doc])*
        #[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
        pub(crate) struct $name(pub $repr);

        impl Id for $name {
            fn new(i: usize) -> Self {
                $name(i as $repr)
            }
            fn ix(self) -> usize {
                self.0 as usize
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, concat!(stringify!($name), "({})"), self.0)
            }
        }
    };
}

id!(
    /// A VirtualCluster, in the order of the snapshot (duplicates left out).
    VcId(u32)
);
id!(
    /// A queue: its position in the snapshot's queues.
    QueueId(u32)
);
id!(
    /// A node of the cycle's `Cluster`, in rack and name order.
    NodeId(u32)
);
id!(
    /// A GPU type (the empty one for CPU-only nodes), in the order nodes first showed it.
    FlavorId(u16)
);
id!(
    /// A rack's nodes of one GPU type.
    RackId(u32)
);
id!(
    /// A job: its position in the snapshot's jobs.
    JobIdx(u32)
);
id!(
    /// A job holding resources: its position in the cycle's runs.
    RunIdx(u32)
);

impl Snapshot {
    pub(crate) fn job(&self, j: JobIdx) -> &Job {
        &self.jobs[j.ix()]
    }
    pub(crate) fn queue(&self, q: QueueId) -> &Queue {
        &self.queues[q.ix()]
    }
}

/// Who a victim search was for, to remember that it found none: a VirtualCluster
/// reclaiming its guarantee, or a queue preempting by priority.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum Claimant {
    Vc(VcId),
    Queue(QueueId),
}

/// A vector indexed by one kind of id.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct IdVec<I, T> {
    raw: Vec<T>,
    _id: PhantomData<fn(I) -> I>,
}

impl<I: Id, T> IdVec<I, T> {
    pub fn new() -> Self {
        IdVec::from(Vec::new())
    }
    pub fn len(&self) -> usize {
        self.raw.len()
    }
    /// Appends `value` and returns its id.
    pub fn push(&mut self, value: T) -> I {
        self.raw.push(value);
        I::new(self.raw.len() - 1)
    }
    pub fn get(&self, id: I) -> Option<&T> {
        self.raw.get(id.ix())
    }
    pub fn get_mut(&mut self, id: I) -> Option<&mut T> {
        self.raw.get_mut(id.ix())
    }
    pub fn iter(&self) -> std::slice::Iter<'_, T> {
        self.raw.iter()
    }
    /// (id, value) pairs in order.
    pub fn iter_enumerated(&self) -> impl DoubleEndedIterator<Item = (I, &T)> {
        self.raw.iter().enumerate().map(|(i, x)| (I::new(i), x))
    }
    /// Every id, in order.
    pub fn ids(&self) -> impl DoubleEndedIterator<Item = I> + use<I, T> {
        (0..self.raw.len()).map(I::new)
    }
}

impl<I: Id, T: Clone> IdVec<I, T> {
    /// `n` copies of `value`.
    pub fn filled(value: T, n: usize) -> Self {
        IdVec::from(vec![value; n])
    }
}

impl<I, T> Default for IdVec<I, T> {
    fn default() -> Self {
        IdVec {
            raw: Vec::new(),
            _id: PhantomData,
        }
    }
}

impl<I, T> From<Vec<T>> for IdVec<I, T> {
    fn from(raw: Vec<T>) -> Self {
        IdVec {
            raw,
            _id: PhantomData,
        }
    }
}

impl<I: Id, T> FromIterator<T> for IdVec<I, T> {
    fn from_iter<It: IntoIterator<Item = T>>(iter: It) -> Self {
        IdVec::from(iter.into_iter().collect::<Vec<T>>())
    }
}

impl<I: Id, T> Index<I> for IdVec<I, T> {
    type Output = T;
    fn index(&self, id: I) -> &T {
        &self.raw[id.ix()]
    }
}

impl<I: Id, T> IndexMut<I> for IdVec<I, T> {
    fn index_mut(&mut self, id: I) -> &mut T {
        &mut self.raw[id.ix()]
    }
}

impl<'a, I: Id, T> IntoIterator for &'a IdVec<I, T> {
    type Item = &'a T;
    type IntoIter = std::slice::Iter<'a, T>;
    fn into_iter(self) -> Self::IntoIter {
        self.raw.iter()
    }
}

impl<I, T: fmt::Debug> fmt::Debug for IdVec<I, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.raw.fmt(f)
    }
}
