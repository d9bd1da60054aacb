//! Client encodings as libpq's error excerpt sees them.
//!
//! libpq measures the `LINE n:` excerpt in the connection's client
//! encoding: where each character starts (`pg_encoding_mblen`) and how many
//! screen columns it takes (`pg_encoding_dsplen`, where zero-width and
//! control characters count as one). In a single-byte encoding every byte
//! is a character one column wide; the multi-byte encodings differ in how
//! a lead byte announces the length, and their non-ASCII characters are
//! mostly two columns wide. Only these two facts are modelled here.

/// The client encoding a server reports in its `client_encoding` setting.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ClientEncoding {
    /// `UTF8`: East Asian wide and fullwidth characters take two columns.
    #[default]
    Utf8,
    /// `SQL_ASCII`, `LATIN1`, `WIN1252`, `KOI8R` and the other encodings
    /// of one byte per character.
    SingleByte,
    /// `EUC_JP` and `EUC_JIS_2004`.
    EucJp,
    /// `EUC_KR` and `JOHAB`.
    EucKr,
    /// `EUC_CN`, `BIG5`, `GBK` and `UHC`: a byte with its high bit set
    /// starts a two-byte character two columns wide.
    DoubleByte,
    /// `EUC_TW`.
    EucTw,
    /// `SJIS` and `SHIFT_JIS_2004`.
    Sjis,
    /// `GB18030`.
    Gb18030,
    /// `MULE_INTERNAL`.
    MuleInternal,
}

impl ClientEncoding {
    /// The encoding a `client_encoding` value names; an unknown name is
    /// taken for UTF-8.
    pub fn from_name(name: &str) -> ClientEncoding {
        match name.to_ascii_uppercase().as_str() {
            "UTF8" | "UNICODE" => ClientEncoding::Utf8,
            "EUC_JP" | "EUC_JIS_2004" => ClientEncoding::EucJp,
            "EUC_KR" | "JOHAB" => ClientEncoding::EucKr,
            "EUC_CN" | "BIG5" | "GBK" | "UHC" => ClientEncoding::DoubleByte,
            "EUC_TW" => ClientEncoding::EucTw,
            "SJIS" | "SHIFT_JIS_2004" => ClientEncoding::Sjis,
            "GB18030" => ClientEncoding::Gb18030,
            "MULE_INTERNAL" => ClientEncoding::MuleInternal,
            "SQL_ASCII" => ClientEncoding::SingleByte,
            other if single_byte_name(other) => ClientEncoding::SingleByte,
            _ => ClientEncoding::Utf8,
        }
    }

    /// The length in bytes (never past the end of `s`) and the width in
    /// screen columns of the character that starts `s`, which is not
    /// empty.
    pub(crate) fn char_at(self, s: &[u8]) -> (usize, usize) {
        const SS2: u8 = 0x8e;
        const SS3: u8 = 0x8f;
        let lead = s[0];
        let high = lead & 0x80 != 0;
        let (len, wide) = match self {
            ClientEncoding::SingleByte => (1, false),
            ClientEncoding::Utf8 => return utf8_char(s),
            ClientEncoding::EucJp => match lead {
                SS2 => (2, false),
                SS3 => (3, true),
                _ if high => (2, true),
                _ => (1, false),
            },
            ClientEncoding::EucKr => match lead {
                SS2 => (2, true),
                SS3 => (3, true),
                _ if high => (2, true),
                _ => (1, false),
            },
            ClientEncoding::DoubleByte => (if high { 2 } else { 1 }, high),
            ClientEncoding::EucTw => match lead {
                SS2 => (4, true),
                SS3 => (3, true),
                _ if high => (2, true),
                _ => (1, false),
            },
            ClientEncoding::Sjis => match lead {
                0xa1..=0xdf => (1, false),
                _ if high => (2, true),
                _ => (1, false),
            },
            ClientEncoding::Gb18030 => match s.get(1) {
                _ if !high => (1, false),
                Some(0x30..=0x39) => (4, true),
                _ => (2, true),
            },
            ClientEncoding::MuleInternal => match lead {
                0x81..=0x8d => (2, false),
                0x9a..=0x9b => (3, false),
                0x90..=0x99 => (3, true),
                0x9c..=0x9d => (4, true),
                _ => (1, false),
            },
        };
        (bounded(s, len), if wide { 2 } else { 1 })
    }
}

/// libpq stops a character at a NUL byte and we at the end of the text.
fn bounded(s: &[u8], len: usize) -> usize {
    s.iter()
        .take(len)
        .position(|&b| b == 0)
        .unwrap_or(len.min(s.len()))
        .max(1)
}

fn utf8_char(s: &[u8]) -> (usize, usize) {
    let len = match s[0] {
        0xc0..=0xdf => 2,
        0xe0..=0xef => 3,
        0xf0..=0xf7 => 4,
        _ => 1,
    };
    let len = bounded(s, len);
    let width = std::str::from_utf8(&s[..len])
        .ok()
        .and_then(|c| c.chars().next())
        .map_or(1, super::display_width);
    (len, width)
}

/// The other server encodings, all of one byte per character.
fn single_byte_name(name: &str) -> bool {
    name.starts_with("LATIN")
        || name.starts_with("WIN")
        || name.starts_with("ISO_8859_")
        || name.starts_with("KOI8")
}

#[cfg(test)]
mod tests {
    use super::ClientEncoding::{self, *};

    #[test]
    fn names_as_the_server_reports_them() {
        let cases = [
            ("UTF8", Utf8),
            ("SQL_ASCII", SingleByte),
            ("LATIN1", SingleByte),
            ("WIN1252", SingleByte),
            ("KOI8R", SingleByte),
            ("ISO_8859_5", SingleByte),
            ("EUC_JP", EucJp),
            ("EUC_JIS_2004", EucJp),
            ("JOHAB", EucKr),
            ("GBK", DoubleByte),
            ("SJIS", Sjis),
            ("GB18030", Gb18030),
            ("unheard of", Utf8),
        ];
        for (name, want) in cases {
            assert_eq!(ClientEncoding::from_name(name), want, "{name}");
        }
    }

    #[test]
    fn characters_as_libpq_measures_them() {
        let cases: [(ClientEncoding, &[u8], (usize, usize)); 12] = [
            (Utf8, "é".as_bytes(), (2, 1)),
            (Utf8, "日".as_bytes(), (3, 2)),
            (Utf8, b"\xe6\x97", (2, 1)),
            (SingleByte, "日".as_bytes(), (1, 1)),
            (EucJp, b"\xa4\xa2", (2, 2)),
            (EucJp, b"\x8e\xb1", (2, 1)),
            (EucJp, b"\x8f\xa1\xa1", (3, 2)),
            (Sjis, b"\xb1", (1, 1)),
            (Sjis, b"\x82\xa0", (2, 2)),
            (Gb18030, b"\x81\x30\x81\x30", (4, 2)),
            (Gb18030, b"\x81\x40", (2, 2)),
            (EucTw, b"\x8e\xa1\xa1\xa1", (4, 2)),
        ];
        for (encoding, bytes, want) in cases {
            assert_eq!(encoding.char_at(bytes), want, "{encoding:?} {bytes:?}");
        }
    }
}
