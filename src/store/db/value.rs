//! The one parameter type a family binds on either engine (`Value`), and the one column
//! reader (`Column`) that reads the same values from either engine's row. On SQLite both
//! are rusqlite's own conversions, so a ported family binds and reads exactly as before.
//! On PostgreSQL a parameter is encoded as the type the server inferred for its
//! placeholder, and a column is read by the type the server sent, as leniently as SQLite
//! reads a flag kept as an integer; a value that does not fit is an error, never a panic.
//! Must not import: http, scan, walks, queue, ops

use super::super::StoreError;
use bytes::BytesMut;
use postgres::types::{IsNull, ToSql, Type, to_sql_checked};
use rusqlite::types::{FromSql, ToSqlOutput, ValueRef};
use std::borrow::Cow;
use std::error::Error;

/// A statement parameter: SQLite's five storage classes.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Value<'a> {
    Null,
    Int(i64),
    Real(f64),
    Text(Cow<'a, str>),
    Blob(Cow<'a, [u8]>),
}

macro_rules! value_from {
    ($($t:ty => |$v:ident| $e:expr),* $(,)?) => {
        $(impl<'a> From<$t> for Value<'a> {
            fn from($v: $t) -> Self {
                $e
            }
        })*
    };
}

value_from! {
    i64 => |v| Value::Int(v),
    i32 => |v| Value::Int(v.into()),
    u32 => |v| Value::Int(v.into()),
    i16 => |v| Value::Int(v.into()),
    u16 => |v| Value::Int(v.into()),
    i8 => |v| Value::Int(v.into()),
    u8 => |v| Value::Int(v.into()),
    bool => |v| Value::Int(v.into()),
    f64 => |v| Value::Real(v),
    &'a str => |v| Value::Text(Cow::Borrowed(v)),
    &'a String => |v| Value::Text(Cow::Borrowed(v.as_str())),
    String => |v| Value::Text(Cow::Owned(v)),
    &'a [u8] => |v| Value::Blob(Cow::Borrowed(v)),
    &'a Vec<u8> => |v| Value::Blob(Cow::Borrowed(v.as_slice())),
    Vec<u8> => |v| Value::Blob(Cow::Owned(v)),
    &'a [u8; 32] => |v| Value::Blob(Cow::Borrowed(v.as_slice())),
    [u8; 32] => |v| Value::Blob(Cow::Owned(v.to_vec())),
}

impl<'a, T: Into<Value<'a>>> From<Option<T>> for Value<'a> {
    fn from(v: Option<T>) -> Self {
        v.map_or(Value::Null, Into::into)
    }
}

impl rusqlite::ToSql for Value<'_> {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(ToSqlOutput::Borrowed(match self {
            Value::Null => ValueRef::Null,
            Value::Int(i) => ValueRef::Integer(*i),
            Value::Real(r) => ValueRef::Real(*r),
            Value::Text(t) => ValueRef::Text(t.as_bytes()),
            Value::Blob(b) => ValueRef::Blob(b),
        }))
    }
}

type BoxError = Box<dyn Error + Sync + Send>;

impl ToSql for Value<'_> {
    fn to_sql(&self, ty: &Type, out: &mut BytesMut) -> Result<IsNull, BoxError> {
        match (self, ty) {
            (Value::Null, _) => Ok(IsNull::Yes),
            (Value::Int(i), &Type::INT8) => i.to_sql(ty, out),
            (Value::Int(i), &Type::INT4) => narrow::<i32>(*i, ty)?.to_sql(ty, out),
            (Value::Int(i), &Type::INT2) => narrow::<i16>(*i, ty)?.to_sql(ty, out),
            (Value::Int(i @ (0 | 1)), &Type::BOOL) => (*i == 1).to_sql(ty, out),
            (Value::Int(i), &Type::FLOAT8) => exact_f64(*i)?.to_sql(ty, out),
            (Value::Real(r), &Type::FLOAT8) => r.to_sql(ty, out),
            (Value::Text(t), _) if <&str as ToSql>::accepts(ty) => t.as_ref().to_sql(ty, out),
            (Value::Blob(b), &Type::BYTEA) => b.as_ref().to_sql(ty, out),
            _ => Err(format!("a parameter {} cannot be bound as {ty}", self.kind()).into()),
        }
    }

    // Every type is accepted here so that `to_sql` can refuse a mismatch with a message
    // that names both sides.
    fn accepts(_: &Type) -> bool {
        true
    }

    to_sql_checked!();
}

fn narrow<T: TryFrom<i64>>(i: i64, ty: &Type) -> Result<T, BoxError> {
    T::try_from(i).map_err(|_| format!("integer {i} is out of range for {ty}").into())
}

/// An integer bound to a float column, as SQLite stores it there: only when no digit is
/// lost.
fn exact_f64(i: i64) -> Result<f64, BoxError> {
    let f = i as f64;
    if f as i64 == i && f.abs() < 9.0e15 {
        Ok(f)
    } else {
        Err(format!("integer {i} has no exact float").into())
    }
}

impl Value<'_> {
    fn kind(&self) -> String {
        match self {
            Value::Null => "null".into(),
            Value::Int(i) => format!("integer {i}"),
            Value::Real(r) => format!("real {r}"),
            Value::Text(_) => "text".into(),
            Value::Blob(b) => format!("blob of {} bytes", b.len()),
        }
    }
}

/// A value a family reads from a column, on either engine.
pub(crate) trait Column: Sized {
    fn lite(row: &rusqlite::Row<'_>, idx: usize) -> Result<Self, StoreError>;
    fn pg(row: &postgres::Row, idx: usize) -> Result<Self, StoreError>;
}

/// A non-null value of one kind; `Column` is it, or its `Option`.
pub(crate) trait Scalar: FromSql + Sized {
    /// The value at `idx`, `None` for NULL; `Err` says why it is not one of these.
    fn read_pg(row: &postgres::Row, idx: usize, ty: &Type) -> Result<Option<Self>, String>;
}

impl<T: Scalar> Column for T {
    fn lite(row: &rusqlite::Row<'_>, idx: usize) -> Result<Self, StoreError> {
        Ok(row.get(idx)?)
    }
    fn pg(row: &postgres::Row, idx: usize) -> Result<Self, StoreError> {
        read_pg::<T>(row, idx)?.ok_or_else(|| column_error(row, idx, "is NULL".into()))
    }
}

impl<T: Scalar> Column for Option<T> {
    fn lite(row: &rusqlite::Row<'_>, idx: usize) -> Result<Self, StoreError> {
        Ok(row.get(idx)?)
    }
    fn pg(row: &postgres::Row, idx: usize) -> Result<Self, StoreError> {
        read_pg::<T>(row, idx)
    }
}

fn read_pg<T: Scalar>(row: &postgres::Row, idx: usize) -> Result<Option<T>, StoreError> {
    let Some(column) = row.columns().get(idx) else {
        let count = row.columns().len();
        return Err(column_error(
            row,
            idx,
            format!("is past the {count} columns"),
        ));
    };
    T::read_pg(row, idx, column.type_()).map_err(|problem| column_error(row, idx, problem))
}

fn column_error(row: &postgres::Row, idx: usize, problem: String) -> StoreError {
    let name = row.columns().get(idx).map_or("?", |c| c.name());
    StoreError::Column {
        index: idx,
        name: name.to_string(),
        problem,
    }
}

/// `row.try_get` as `Option<T>`, its error in words (`postgres::Row::get` would panic).
fn get<'r, T: postgres::types::FromSql<'r>>(
    row: &'r postgres::Row,
    idx: usize,
) -> Result<Option<T>, String> {
    row.try_get::<_, Option<T>>(idx)
        .map_err(|e| super::super::error::pg_words(&e))
}

fn wrong(ty: &Type, want: &str) -> String {
    format!("holds {ty}, not {want}")
}

impl Scalar for i64 {
    fn read_pg(row: &postgres::Row, idx: usize, ty: &Type) -> Result<Option<Self>, String> {
        match *ty {
            Type::INT8 => get::<i64>(row, idx),
            Type::INT4 => Ok(get::<i32>(row, idx)?.map(i64::from)),
            Type::INT2 => Ok(get::<i16>(row, idx)?.map(i64::from)),
            Type::BOOL => Ok(get::<bool>(row, idx)?.map(i64::from)),
            Type::NUMERIC => get::<Numeric>(row, idx)?.map(|n| n.integer()).transpose(),
            _ => Err(wrong(ty, "an integer")),
        }
    }
}

/// The narrower integers a model keeps (a width, an orientation, a rating), read as an
/// i64 and range-checked, as rusqlite does.
macro_rules! narrow_scalar {
    ($($t:ty),*) => {
        $(impl Scalar for $t {
            fn read_pg(row: &postgres::Row, idx: usize, ty: &Type) -> Result<Option<Self>, String> {
                i64::read_pg(row, idx, ty)?
                    .map(|i| <$t>::try_from(i).map_err(|_| format!("holds {i}, beyond {}", stringify!($t))))
                    .transpose()
            }
        })*
    };
}

narrow_scalar!(i32, u32, i16, u16, i8, u8);

impl Scalar for bool {
    fn read_pg(row: &postgres::Row, idx: usize, ty: &Type) -> Result<Option<Self>, String> {
        match *ty {
            Type::BOOL => get::<bool>(row, idx),
            Type::INT8 | Type::INT4 | Type::INT2 => Ok(i64::read_pg(row, idx, ty)?.map(|i| i != 0)),
            _ => Err(wrong(ty, "a flag")),
        }
    }
}

impl Scalar for f64 {
    fn read_pg(row: &postgres::Row, idx: usize, ty: &Type) -> Result<Option<Self>, String> {
        match *ty {
            Type::FLOAT8 => get::<f64>(row, idx),
            Type::FLOAT4 => Ok(get::<f32>(row, idx)?.map(f64::from)),
            Type::NUMERIC => Ok(get::<Numeric>(row, idx)?.map(|n| n.real())),
            Type::INT8 | Type::INT4 | Type::INT2 => {
                Ok(i64::read_pg(row, idx, ty)?.map(|i| i as f64))
            }
            _ => Err(wrong(ty, "a number")),
        }
    }
}

impl Scalar for String {
    fn read_pg(row: &postgres::Row, idx: usize, ty: &Type) -> Result<Option<Self>, String> {
        if <String as postgres::types::FromSql>::accepts(ty) {
            get::<String>(row, idx)
        } else {
            Err(wrong(ty, "text"))
        }
    }
}

impl Scalar for Vec<u8> {
    fn read_pg(row: &postgres::Row, idx: usize, ty: &Type) -> Result<Option<Self>, String> {
        match *ty {
            Type::BYTEA => get::<Vec<u8>>(row, idx),
            // SQLite hands a text column's bytes to a blob reader too.
            _ if <String as postgres::types::FromSql>::accepts(ty) => {
                Ok(get::<String>(row, idx)?.map(String::into_bytes))
            }
            _ => Err(wrong(ty, "bytes")),
        }
    }
}

impl Scalar for [u8; 32] {
    fn read_pg(row: &postgres::Row, idx: usize, ty: &Type) -> Result<Option<Self>, String> {
        match Vec::<u8>::read_pg(row, idx, ty)? {
            None => Ok(None),
            Some(bytes) => match <[u8; 32]>::try_from(bytes.as_slice()) {
                Ok(fixed) => Ok(Some(fixed)),
                Err(_) => Err(format!("holds {} bytes, not 32", bytes.len())),
            },
        }
    }
}

/// A NUMERIC as the server sends it (base-10000 digits, the first at `weight`), which
/// PostgreSQL answers for `sum` of integers and for `avg`, where SQLite answers an integer
/// and a real.
struct Numeric {
    negative: bool,
    weight: i16,
    digits: Vec<i16>,
}

impl Numeric {
    /// The value when it is a whole number that fits in an i64.
    fn integer(&self) -> Result<i64, String> {
        let mut value: i64 = 0;
        for (at, &digit) in self.digits.iter().enumerate() {
            let power = i32::from(self.weight) - at as i32;
            if power < 0 {
                if digit != 0 {
                    return Err("holds a number with a fraction, not an integer".into());
                }
                continue;
            }
            value = value
                .checked_mul(10_000)
                .and_then(|v| v.checked_add(i64::from(digit)))
                .ok_or("holds a number beyond an integer's range")?;
        }
        // Whole groups of zeros after the last digit sent.
        for _ in self.digits.len() as i32..=i32::from(self.weight) {
            value = value
                .checked_mul(10_000)
                .ok_or("holds a number beyond an integer's range")?;
        }
        Ok(if self.negative { -value } else { value })
    }

    fn real(&self) -> f64 {
        let magnitude: f64 = self
            .digits
            .iter()
            .enumerate()
            .map(|(at, &d)| f64::from(d) * 10_000f64.powi(i32::from(self.weight) - at as i32))
            .sum();
        if self.negative { -magnitude } else { magnitude }
    }
}

impl<'r> postgres::types::FromSql<'r> for Numeric {
    fn from_sql(_: &Type, raw: &'r [u8]) -> Result<Self, BoxError> {
        let word = |at: usize| -> Result<i16, BoxError> {
            match raw.get(at..at + 2) {
                Some(b) => Ok(i16::from_be_bytes([b[0], b[1]])),
                None => Err("a NUMERIC cut short".into()),
            }
        };
        let count = usize::try_from(word(0)?)?;
        let sign = word(4)? as u16;
        if sign == 0xC000 {
            return Err("holds NaN, not a number".into());
        }
        let digits = (0..count)
            .map(|i| word(8 + 2 * i))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Numeric {
            negative: sign == 0x4000,
            weight: word(2)?,
            digits,
        })
    }

    fn accepts(ty: &Type) -> bool {
        *ty == Type::NUMERIC
    }
}

/// Any value as it is stored, for code that moves rows whatever their columns (the copy of
/// a whole index, `store::copy`): SQLite's storage class, or PostgreSQL's column type
/// sorted into the same five.
impl Column for Value<'static> {
    fn lite(row: &rusqlite::Row<'_>, idx: usize) -> Result<Self, StoreError> {
        Ok(match row.get_ref(idx)? {
            ValueRef::Null => Value::Null,
            ValueRef::Integer(i) => Value::Int(i),
            ValueRef::Real(r) => Value::Real(r),
            ValueRef::Text(t) => Value::Text(Cow::Owned(String::from_utf8_lossy(t).into_owned())),
            ValueRef::Blob(b) => Value::Blob(Cow::Owned(b.to_vec())),
        })
    }

    fn pg(row: &postgres::Row, idx: usize) -> Result<Self, StoreError> {
        let ty = row
            .columns()
            .get(idx)
            .map(|c| c.type_().clone())
            .ok_or_else(|| column_error(row, idx, "is past the last column".into()))?;
        let value = match ty {
            Type::INT8 | Type::INT4 | Type::INT2 | Type::BOOL => {
                Option::<i64>::pg(row, idx)?.map(Value::Int)
            }
            Type::FLOAT8 | Type::FLOAT4 | Type::NUMERIC => {
                Option::<f64>::pg(row, idx)?.map(Value::Real)
            }
            Type::BYTEA => Option::<Vec<u8>>::pg(row, idx)?.map(|b| Value::Blob(Cow::Owned(b))),
            _ => Option::<String>::pg(row, idx)?.map(|t| Value::Text(Cow::Owned(t))),
        };
        Ok(value.unwrap_or(Value::Null))
    }
}
