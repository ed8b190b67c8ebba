//! Splitting an input into a chunking and a body, so one input says
//! both what a stream carries and how the network cut it.

/// The chunk sizes an input's first byte picks for the rest: the rest
/// whole, one byte at a time, or sizes cycling through the next few
/// bytes of the input.
pub fn split(data: &[u8]) -> (Vec<usize>, &[u8]) {
    let Some((&mode, rest)) = data.split_first() else {
        return (Vec::new(), data);
    };
    match mode % 4 {
        0 => (vec![rest.len().max(1)], rest),
        1 => (vec![1], rest),
        _ => {
            let n = usize::from(mode >> 2).clamp(1, 8).min(rest.len());
            let (sizes, body) = rest.split_at(n);
            let sizes = sizes.iter().map(|&b| usize::from(b).max(1)).collect();
            (sizes, body)
        }
    }
}

/// `body` cut into pieces of `sizes`, cycled (none empty).
pub fn pieces<'a>(body: &'a [u8], sizes: &[usize]) -> Vec<&'a [u8]> {
    let mut out = Vec::new();
    let mut at = 0;
    let mut i = 0;
    while at < body.len() {
        let size = sizes
            .get(i % sizes.len().max(1))
            .copied()
            .unwrap_or(1)
            .max(1);
        let end = (at + size).min(body.len());
        out.push(&body[at..end]);
        at = end;
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_cover_the_body_in_order() {
        let body = b"abcdefghij";
        for sizes in [vec![1], vec![3], vec![2, 5], vec![100]] {
            let joined: Vec<u8> = pieces(body, &sizes).concat();
            assert_eq!(joined, body);
        }
        assert!(pieces(b"", &[3]).is_empty());
        let (sizes, body) = split(&[0b0000_1010, 3, 4, b'x']);
        assert_eq!(sizes, vec![3, 4]);
        assert_eq!(body, b"x");
    }
}
