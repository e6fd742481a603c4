//! The request headers many operations take, with the rule the server applies to them,
//! stated once here rather than on every operation.

use utoipa::openapi::path::ParameterIn;
use utoipa::openapi::schema::{ObjectBuilder, Type};
use utoipa::openapi::OpenApi;
use utoipa::Modify;

pub(super) struct Headers;

impl Modify for Headers {
    fn modify(&self, openapi: &mut OpenApi) {
        for item in openapi.paths.paths.values_mut() {
            let operations = [
                &mut item.get,
                &mut item.put,
                &mut item.post,
                &mut item.delete,
                &mut item.patch,
            ];
            for operation in operations.into_iter().flatten() {
                let parameters = operation.parameters.iter_mut().flatten();
                for parameter in parameters.filter(|p| p.parameter_in == ParameterIn::Header) {
                    if parameter.name == "Idempotency-Key" {
                        // What `answers::IdempotencyKey` takes: 1 to 255 visible ASCII
                        // characters (HTTP trims spaces at either end).
                        parameter.schema = Some(
                            ObjectBuilder::new()
                                .schema_type(Type::String)
                                .min_length(Some(1))
                                .max_length(Some(255))
                                .pattern(Some(r"^[!-~]([ -~]*[!-~])?$"))
                                .into(),
                        );
                    }
                }
            }
        }
    }
}
