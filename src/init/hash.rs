//! Which hash partition PostgreSQL routes an account id to.
//!
//! Knowing it lets each loader connection send exactly the rows of its own
//! partitions, in ascending `aid` order, so every hash partition ends up
//! with pgbench's physical row order although partitions load side by side.
//! The computation is PostgreSQL's: the `int8` (and, for values that fit,
//! identical `int4`) extended hash opclass function, which is Bob Jenkins'
//! lookup3 final mix over one 32-bit word with the partitioning seed, then
//! combined into the row hash and reduced modulo the partition count. Unit
//! tests pin values read from a PostgreSQL 15 server; if it were ever wrong
//! the rows would still reach the right partitions (the server routes
//! them), only the physical order would differ.

/// The seed PostgreSQL uses for hash partitioning.
const HASH_PARTITION_SEED: u64 = 0x7A5B_2236_7996_DCFD;

fn mix(a: &mut u32, b: &mut u32, c: &mut u32) {
    *a = a.wrapping_sub(*c);
    *a ^= c.rotate_left(4);
    *c = c.wrapping_add(*b);
    *b = b.wrapping_sub(*a);
    *b ^= a.rotate_left(6);
    *a = a.wrapping_add(*c);
    *c = c.wrapping_sub(*b);
    *c ^= b.rotate_left(8);
    *b = b.wrapping_add(*a);
    *a = a.wrapping_sub(*c);
    *a ^= c.rotate_left(16);
    *c = c.wrapping_add(*b);
    *b = b.wrapping_sub(*a);
    *b ^= a.rotate_left(19);
    *a = a.wrapping_add(*c);
    *c = c.wrapping_sub(*b);
    *c ^= b.rotate_left(4);
    *b = b.wrapping_add(*a);
}

fn final_mix(a: &mut u32, b: &mut u32, c: &mut u32) {
    *c ^= *b;
    *c = c.wrapping_sub(b.rotate_left(14));
    *a ^= *c;
    *a = a.wrapping_sub(c.rotate_left(11));
    *b ^= *a;
    *b = b.wrapping_sub(a.rotate_left(25));
    *c ^= *b;
    *c = c.wrapping_sub(b.rotate_left(16));
    *a ^= *c;
    *a = a.wrapping_sub(c.rotate_left(4));
    *b ^= *a;
    *b = b.wrapping_sub(a.rotate_left(14));
    *c ^= *b;
    *c = c.wrapping_sub(b.rotate_left(24));
}

/// The 64-bit seeded hash of one 32-bit word.
fn hash_u32_extended(k: u32, seed: u64) -> u64 {
    let init = 0x9e37_79b9_u32.wrapping_add(4).wrapping_add(3_923_095);
    let (mut a, mut b, mut c) = (init, init, init);
    if seed != 0 {
        a = a.wrapping_add((seed >> 32) as u32);
        b = b.wrapping_add(seed as u32);
        mix(&mut a, &mut b, &mut c);
    }
    a = a.wrapping_add(k);
    final_mix(&mut a, &mut b, &mut c);
    (u64::from(b) << 32) | u64::from(c)
}

/// PostgreSQL's extended hash of an `int8` (equal to the `int4` one for
/// values that fit in 32 bits).
fn hash_int8_extended(value: i64, seed: u64) -> u64 {
    let low = value as u32;
    let high = (value >> 32) as u32;
    let folded = if value >= 0 { low ^ high } else { low ^ !high };
    hash_u32_extended(folded, seed)
}

/// The 0-based remainder (partition `remainder + 1` in pgbench's naming)
/// that account `aid` is routed to among `modulus` hash partitions.
pub fn hash_partition_of(aid: i64, modulus: u32) -> u32 {
    let key_hash = hash_int8_extended(aid, HASH_PARTITION_SEED);
    let row_hash = key_hash.wrapping_add(0x49a0_f4dd_15e5_a8e3);
    (row_hash % u64::from(modulus)) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hashes_match_postgresql() {
        // select hashint8extended(k, 8816678312871386365)
        let cases: [(i64, i64); 6] = [
            (1, 5968994663651403477),
            (2, -6784076462669891433),
            (100000, -4261177139570981594),
            (2147483647, -6050265599104649060),
            (5000000000, -2799505259769899283),
            (-3, 656044135061257817),
        ];
        for (value, expected) in cases {
            assert_eq!(
                hash_int8_extended(value, HASH_PARTITION_SEED) as i64,
                expected,
                "value {value}"
            );
        }
    }

    #[test]
    fn routing_matches_postgresql() {
        // rows 1..=20 inserted into a table hash-partitioned three ways
        let expected = [3, 1, 2, 1, 3, 1, 2, 1, 3, 2, 3, 3, 2, 2, 1, 1, 3, 1, 1, 1];
        for (aid, partition) in (1..=20).zip(expected) {
            assert_eq!(hash_partition_of(aid, 3) + 1, partition, "aid {aid}");
        }
    }
}
