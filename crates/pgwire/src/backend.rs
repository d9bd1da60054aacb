//! Backend messages decoded from a borrowed frame body, without allocating.
//!
//! [`Message::parse`] turns a [`Frame`] into a typed view whose fields borrow
//! from the read buffer. Data rows are walked column by column with
//! [`DataRow::columns`]; error and notice fields with [`Fields`]. Only turning
//! an ErrorResponse into an owned [`DbError`](crate::DbError) allocates.
//! Every reader checks its bounds: a malformed body is a protocol error.

use std::borrow::Cow;

use crate::error::Error;
use crate::frame::Frame;

/// Transaction status reported by ReadyForQuery.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TxStatus {
    /// `I`: not in a transaction block.
    Idle,
    /// `T`: in a transaction block.
    InTransaction,
    /// `E`: in a failed transaction block.
    Failed,
}

/// Authentication request codes the client understands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AuthRequest<'a> {
    Ok,
    Cleartext,
    Md5 {
        salt: [u8; 4],
    },
    /// SASL with the mechanism names the server offers (NUL-separated list).
    Sasl(&'a [u8]),
    SaslContinue(&'a [u8]),
    SaslFinal(&'a [u8]),
    /// Kerberos, GSSAPI, SSPI and other methods this client does not speak.
    Unsupported(u32),
}

/// One backend message, borrowing from the read buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Message<'a> {
    Authentication(AuthRequest<'a>),
    BackendKeyData {
        process_id: i32,
        secret_key: i32,
    },
    BindComplete,
    CloseComplete,
    /// The command tag, e.g. `INSERT 0 1`, as sent: every statement ends
    /// with one, and most readers never look at it, so it is not checked
    /// for UTF-8 here.
    CommandComplete(&'a [u8]),
    CopyData(&'a [u8]),
    CopyDone,
    CopyInResponse {
        binary: bool,
    },
    CopyOutResponse {
        binary: bool,
    },
    CopyBothResponse {
        binary: bool,
    },
    DataRow(DataRow<'a>),
    EmptyQueryResponse,
    ErrorResponse(Fields<'a>),
    NoData,
    NoticeResponse(Fields<'a>),
    /// A notification, its channel and payload in the client encoding.
    NotificationResponse {
        process_id: i32,
        channel: &'a [u8],
        payload: &'a [u8],
    },
    ParameterDescription(&'a [u8]),
    ParameterStatus {
        name: &'a str,
        value: &'a str,
    },
    ParseComplete,
    PortalSuspended,
    ReadyForQuery(TxStatus),
    RowDescription(RowDescription<'a>),
}

impl<'a> Message<'a> {
    pub fn parse(frame: Frame<'a>) -> Result<Message<'a>, Error> {
        let mut r = Reader::new(frame.tag, frame.body);
        let msg = match frame.tag {
            b'R' => Message::Authentication(parse_auth(&mut r)?),
            b'K' => Message::BackendKeyData {
                process_id: r.i32()?,
                secret_key: r.i32()?,
            },
            b'2' => Message::BindComplete,
            b'3' => Message::CloseComplete,
            b'C' => Message::CommandComplete(r.cbytes()?),
            b'd' => Message::CopyData(r.rest()),
            b'c' => Message::CopyDone,
            b'G' => Message::CopyInResponse {
                binary: r.u8()? != 0,
            },
            b'H' => Message::CopyOutResponse {
                binary: r.u8()? != 0,
            },
            b'W' => Message::CopyBothResponse {
                binary: r.u8()? != 0,
            },
            b'D' => {
                let count = r.u16()?;
                Message::DataRow(DataRow {
                    count,
                    body: r.rest(),
                })
            }
            b'I' => Message::EmptyQueryResponse,
            b'E' => Message::ErrorResponse(Fields::new(frame.body)),
            b'n' => Message::NoData,
            b'N' => Message::NoticeResponse(Fields::new(frame.body)),
            b'A' => Message::NotificationResponse {
                process_id: r.i32()?,
                channel: r.cbytes()?,
                payload: r.cbytes()?,
            },
            b't' => Message::ParameterDescription(r.rest()),
            b'S' => Message::ParameterStatus {
                name: r.cstr()?,
                value: r.cstr()?,
            },
            b'1' => Message::ParseComplete,
            b's' => Message::PortalSuspended,
            b'Z' => Message::ReadyForQuery(match r.u8()? {
                b'I' => TxStatus::Idle,
                b'T' => TxStatus::InTransaction,
                b'E' => TxStatus::Failed,
                other => {
                    return Err(Error::protocol(format!(
                        "unexpected transaction status \"{}\" in ReadyForQuery",
                        other.escape_ascii()
                    )))
                }
            }),
            b'T' => {
                let count = r.u16()?;
                Message::RowDescription(RowDescription {
                    count,
                    body: r.rest(),
                })
            }
            other => {
                return Err(Error::protocol(format!(
                    "unexpected message type 0x{other:02x} from server"
                )))
            }
        };
        Ok(msg)
    }
}

fn parse_auth<'a>(r: &mut Reader<'a>) -> Result<AuthRequest<'a>, Error> {
    Ok(match r.i32()? as u32 {
        0 => AuthRequest::Ok,
        3 => AuthRequest::Cleartext,
        5 => {
            let s = r.take(4)?;
            AuthRequest::Md5 {
                salt: [s[0], s[1], s[2], s[3]],
            }
        }
        10 => AuthRequest::Sasl(r.rest()),
        11 => AuthRequest::SaslContinue(r.rest()),
        12 => AuthRequest::SaslFinal(r.rest()),
        other => AuthRequest::Unsupported(other),
    })
}

/// A DataRow: the column count and the undecoded column values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DataRow<'a> {
    count: u16,
    body: &'a [u8],
}

impl<'a> DataRow<'a> {
    /// Number of columns the server says the row has.
    pub fn len(&self) -> usize {
        usize::from(self.count)
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The column values in order; `None` is SQL NULL.
    pub fn columns(&self) -> Columns<'a> {
        Columns {
            left: self.count,
            r: Reader::new(b'D', self.body),
        }
    }
}

/// Iterator over the values of a [`DataRow`].
#[derive(Clone, Debug)]
pub struct Columns<'a> {
    left: u16,
    r: Reader<'a>,
}

impl<'a> Iterator for Columns<'a> {
    type Item = Result<Option<&'a [u8]>, Error>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        let value = self.r.i32().and_then(|len| {
            if len < 0 {
                Ok(None)
            } else {
                self.r.take(len as usize).map(Some)
            }
        });
        if value.is_err() {
            self.left = 0;
        }
        Some(value)
    }
}

/// A RowDescription: the field count and the undecoded field descriptions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RowDescription<'a> {
    count: u16,
    body: &'a [u8],
}

impl<'a> RowDescription<'a> {
    pub fn len(&self) -> usize {
        usize::from(self.count)
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Field names and type OIDs, in column order; a name that is not
    /// UTF-8 is an error.
    pub fn fields(&self) -> impl Iterator<Item = Result<(&'a str, u32), Error>> {
        self.raw().map(|f| {
            f.and_then(|(name, oid)| {
                std::str::from_utf8(name)
                    .map(|name| (name, oid))
                    .map_err(|_| {
                        Error::protocol("message of type \"T\" holds a string that is not UTF-8")
                    })
            })
        })
    }

    /// Column names in order. They come in the client encoding, which need
    /// not be UTF-8 (a `LATIN1` database): bytes that are not UTF-8 read as
    /// U+FFFD. A malformed body ends the names early.
    pub fn column_names(&self) -> impl Iterator<Item = Cow<'a, str>> {
        self.raw()
            .map_while(Result::ok)
            .map(|(name, _)| String::from_utf8_lossy(name))
    }

    fn raw(&self) -> impl Iterator<Item = Result<(&'a [u8], u32), Error>> {
        let mut r = Reader::new(b'T', self.body);
        let mut left = self.count;
        std::iter::from_fn(move || {
            if left == 0 {
                return None;
            }
            left -= 1;
            let field = (|| {
                let name = r.cbytes()?;
                r.take(6)?;
                let oid = r.i32()? as u32;
                r.take(8)?;
                Ok((name, oid))
            })();
            if field.is_err() {
                left = 0;
            }
            Some(field)
        })
    }
}

/// The fields of an ErrorResponse or NoticeResponse: pairs of a one-byte
/// code and a NUL-terminated value, ending with a zero byte.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fields<'a> {
    body: &'a [u8],
}

impl<'a> Fields<'a> {
    pub fn new(body: &'a [u8]) -> Self {
        Fields { body }
    }

    /// The value of the field with this code (`b'C'` is the SQLSTATE), if
    /// it is UTF-8.
    pub fn get(&self, code: u8) -> Option<&'a str> {
        self.raw()
            .find_map(|f| f.ok().filter(|(c, _)| *c == code))
            .and_then(|(_, v)| std::str::from_utf8(v).ok())
    }

    /// Every field in order; a malformed body ends with an error. Texts
    /// come in the client encoding, which need not be UTF-8 (a `LATIN1`
    /// database): bytes that are not UTF-8 read as U+FFFD.
    pub fn iter(&self) -> impl Iterator<Item = Result<(u8, Cow<'a, str>), Error>> {
        self.raw()
            .map(|f| f.map(|(code, value)| (code, String::from_utf8_lossy(value))))
    }

    fn raw(&self) -> impl Iterator<Item = Result<(u8, &'a [u8]), Error>> {
        let mut r = Reader::new(b'E', self.body);
        let mut done = false;
        std::iter::from_fn(move || {
            if done {
                return None;
            }
            let field = (|| {
                let code = r.u8()?;
                if code == 0 {
                    return Ok(None);
                }
                Ok(Some((code, r.cbytes()?)))
            })();
            match field {
                Ok(Some(f)) => Some(Ok(f)),
                Ok(None) => {
                    done = true;
                    None
                }
                Err(e) => {
                    done = true;
                    Some(Err(e))
                }
            }
        })
    }
}

/// A bounds-checked cursor over a message body.
#[derive(Clone, Debug)]
pub(crate) struct Reader<'a> {
    tag: u8,
    data: &'a [u8],
}

impl<'a> Reader<'a> {
    pub(crate) fn new(tag: u8, data: &'a [u8]) -> Self {
        Reader { tag, data }
    }

    fn short(&self) -> Error {
        Error::protocol(format!(
            "message of type \"{}\" is shorter than its contents",
            self.tag.escape_ascii()
        ))
    }

    pub(crate) fn take(&mut self, n: usize) -> Result<&'a [u8], Error> {
        if self.data.len() < n {
            return Err(self.short());
        }
        let (head, tail) = self.data.split_at(n);
        self.data = tail;
        Ok(head)
    }

    pub(crate) fn u8(&mut self) -> Result<u8, Error> {
        Ok(self.take(1)?[0])
    }

    pub(crate) fn u16(&mut self) -> Result<u16, Error> {
        let b = self.take(2)?;
        Ok(u16::from_be_bytes([b[0], b[1]]))
    }

    pub(crate) fn i32(&mut self) -> Result<i32, Error> {
        let b = self.take(4)?;
        Ok(i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    /// A NUL-terminated string's bytes, without the NUL.
    pub(crate) fn cbytes(&mut self) -> Result<&'a [u8], Error> {
        let Some(nul) = self.data.iter().position(|&b| b == 0) else {
            return Err(self.short());
        };
        let s = self.take(nul + 1)?;
        Ok(&s[..nul])
    }

    pub(crate) fn cstr(&mut self) -> Result<&'a str, Error> {
        let s = self.cbytes()?;
        std::str::from_utf8(s).map_err(|_| {
            Error::protocol(format!(
                "message of type \"{}\" holds a string that is not UTF-8",
                self.tag.escape_ascii()
            ))
        })
    }

    pub(crate) fn rest(&mut self) -> &'a [u8] {
        std::mem::take(&mut self.data)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frame::ReadBuf;
    use proptest::prelude::*;

    /// Everything a caller might do with a message, to reach every reader.
    fn walk(msg: Message<'_>) {
        match msg {
            Message::DataRow(row) => row.columns().for_each(drop),
            Message::RowDescription(desc) => desc.fields().for_each(drop),
            Message::ErrorResponse(f) | Message::NoticeResponse(f) => {
                let _ = crate::DbError::from_fields(f);
            }
            _ => {}
        }
    }

    proptest! {
        /// Arbitrary server bytes, arriving in arbitrary pieces, give
        /// messages or errors, never a panic.
        #[test]
        fn arbitrary_input_never_panics(
            data in proptest::collection::vec(any::<u8>(), 0..512),
            cut in 0usize..512,
            tag in proptest::sample::select(b"RK23CdcGHWDIEnNAtS1sZT".to_vec()),
        ) {
            let mut framed = vec![tag];
            framed.extend_from_slice(&((data.len() + 4) as u32).to_be_bytes());
            framed.extend_from_slice(&data);
            for input in [&data[..], &framed[..]] {
                let cut = cut.min(input.len());
                let mut rb = ReadBuf::new();
                for piece in [&input[..cut], &input[cut..]] {
                    let spare = rb.spare();
                    spare[..piece.len()].copy_from_slice(piece);
                    rb.filled(piece.len());
                    while let Ok(Some(frame)) = rb.next_frame() {
                        if let Ok(msg) = Message::parse(frame) {
                            walk(msg);
                        }
                    }
                }
            }
        }
    }

    fn parse(tag: u8, body: &[u8]) -> Result<Message<'_>, Error> {
        Message::parse(Frame { tag, body })
    }

    #[test]
    fn data_row_columns_and_nulls() {
        let body = b"\0\x03\0\0\0\x02ab\xff\xff\xff\xff\0\0\0\0";
        let Message::DataRow(row) = parse(b'D', body).unwrap() else {
            panic!("not a data row");
        };
        let cols: Vec<_> = row.columns().map(|c| c.unwrap()).collect();
        assert_eq!(cols, vec![Some(&b"ab"[..]), None, Some(&b""[..])]);
    }

    #[test]
    fn malformed_bodies_are_errors_not_panics() {
        let cases: &[(u8, &[u8])] = &[
            (b'K', b"\0\0\0"),
            (b'C', b"SELECT 1"),
            (b'Z', b""),
            (b'Z', b"X"),
            (b'S', b"name\0value"),
            (b'R', b"\0\0\0\x05ab"),
            (b'A', b"\0\0\0\x01chan"),
            (b'?', b""),
            (b'S', b"\xff\xfe\0value\0"),
        ];
        for (tag, body) in cases {
            assert!(
                parse(*tag, body).is_err(),
                "{} {body:?}",
                tag.escape_ascii()
            );
        }
        // A command tag is passed on as sent, unchecked.
        assert_eq!(
            parse(b'C', b"\xff\xfe\0").unwrap(),
            Message::CommandComplete(b"\xff\xfe")
        );
        let Message::DataRow(row) = parse(b'D', b"\0\x02\0\0\0\x09ab").unwrap() else {
            panic!("not a data row");
        };
        let cols: Vec<_> = row.columns().collect();
        assert_eq!(cols.len(), 1);
        assert!(cols[0].is_err());
    }

    #[test]
    fn error_fields_by_code() {
        let body = b"SERROR\0C42P01\0Mrelation \"x\" does not exist\0P15\0\0";
        let Message::ErrorResponse(fields) = parse(b'E', body).unwrap() else {
            panic!("not an error");
        };
        assert_eq!(fields.get(b'C'), Some("42P01"));
        assert_eq!(fields.get(b'P'), Some("15"));
        assert_eq!(fields.get(b'D'), None);
        let truncated = Fields::new(b"SERROR\0Cabc");
        assert!(truncated.iter().any(|f| f.is_err()));
    }

    #[test]
    fn row_description_fields() {
        let mut body = vec![0, 1];
        body.extend_from_slice(b"aid\0");
        body.extend_from_slice(&[0; 6]);
        body.extend_from_slice(&23u32.to_be_bytes());
        body.extend_from_slice(&[0; 8]);
        let Message::RowDescription(desc) = parse(b'T', &body).unwrap() else {
            panic!("not a row description");
        };
        let fields: Vec<_> = desc.fields().map(|f| f.unwrap()).collect();
        assert_eq!(fields, vec![("aid", 23)]);
    }
}
