//! A JSON document in a text column, typed: what `sqlx::types::Json<T>` is for one driver,
//! for the `Any` driver the store runs on (SQLite and PostgreSQL alike), which has no JSON type
//! of its own. A row reads `Json<Vec<String>>` and binds `Json(&value)`; the text is serde's.

use serde::Serialize;
use serde::de::DeserializeOwned;
use sqlx::any::{Any, AnyTypeInfo};
use sqlx::encode::IsNull;
use sqlx::error::BoxDynError;
use sqlx::{Database, Decode, Encode, Type};

/// `T` stored as JSON text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Json<T>(pub T);

impl<T> Type<Any> for Json<T> {
    fn type_info() -> AnyTypeInfo {
        <String as Type<Any>>::type_info()
    }

    fn compatible(ty: &AnyTypeInfo) -> bool {
        <String as Type<Any>>::compatible(ty)
    }
}

impl<'r, T: DeserializeOwned> Decode<'r, Any> for Json<T> {
    fn decode(value: <Any as Database>::ValueRef<'r>) -> Result<Self, BoxDynError> {
        let text = <&str as Decode<Any>>::decode(value)?;
        Ok(Json(serde_json::from_str(text)?))
    }
}

impl<T: Serialize> Encode<'_, Any> for Json<T> {
    fn encode_by_ref(&self, buf: &mut <Any as Database>::ArgumentBuffer) -> Result<IsNull, BoxDynError> {
        <String as Encode<Any>>::encode(serde_json::to_string(&self.0)?, buf)
    }
}
