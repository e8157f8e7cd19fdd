/*
 * gkfda.h - prediction from a gkfda model file (docs/model-format.md) in C.
 *
 * Link against the Rust crate's library: target/release/libgkfda.so (or libgkfda.a,
 * with -lpthread -ldl -lm). Every function returning int returns GKFDA_OK (0) on
 * success or one of the GKFDA_ERROR_* codes; the message of the failure is then
 * gkfda_last_error(). No function aborts or unwinds into the caller.
 *
 * Inputs are row-major arrays of n_rows x n_features doubles; outputs are written to
 * caller-allocated row-major arrays, and only on success.
 *
 * Thread safety: a loaded gkfda_model is immutable. Any number of threads may call the
 * prediction and accessor functions on one model at once; only gkfda_model_free must not
 * run concurrently with (or before the end of) any other use of that model.
 */
#ifndef GKFDA_H
#define GKFDA_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Status codes. */
#define GKFDA_OK 0
#define GKFDA_ERROR_NULL 1        /* a required pointer was NULL */
#define GKFDA_ERROR_IO 2          /* the model file could not be read */
#define GKFDA_ERROR_MODEL 3       /* the bytes are not a valid model file */
#define GKFDA_ERROR_INPUT 4       /* wrong n_features, a non-finite value, outputs overflow */
#define GKFDA_ERROR_UNSUPPORTED 5 /* the model does not do that (e.g. proba of a regressor) */
#define GKFDA_ERROR_MEMORY 6      /* an allocation failed */
#define GKFDA_ERROR_INTERNAL 7    /* a bug in the library, caught at the boundary */

/* Tasks (gkfda_task). */
#define GKFDA_TASK_CLASSIFIER 0  /* gkfda_predict_proba, gkfda_predict, gkfda_decision_function */
#define GKFDA_TASK_REGRESSOR 1   /* gkfda_decision_function: the predicted values */
#define GKFDA_TASK_TRANSFORMER 2 /* gkfda_transform */

/* An opaque, immutable loaded model. */
typedef struct gkfda_model gkfda_model;

/* Loads and checks the model file at path (NUL-terminated). On success *out is a new
 * model, to be freed with gkfda_model_free; on error *out is left untouched. Only a
 * regular file is read (GKFDA_ERROR_IO for a FIFO, a device or a directory), and no more
 * of it than its header accounts for (GKFDA_ERROR_MODEL for a file of another size). */
int gkfda_model_load(const char *path, gkfda_model **out);

/* As gkfda_model_load, from the len bytes of a model file at data (copied: the caller
 * may free them after the call). */
int gkfda_model_from_bytes(const uint8_t *data, size_t len, gkfda_model **out);

/* Frees a model; NULL is ignored. */
void gkfda_model_free(gkfda_model *model);

/* Class probabilities of a classifier: out holds n_rows x gkfda_n_classes(model)
 * doubles, in the order of gkfda_class_label. n_features must equal
 * gkfda_n_features(model). */
int gkfda_predict_proba(const gkfda_model *model, const double *x, size_t n_rows,
                        size_t n_features, double *out);

/* Decision values of a classifier (n_rows x gkfda_n_outputs: one log-odds per row for
 * two classes) or the predicted values of a regressor (n_rows values). */
int gkfda_decision_function(const gkfda_model *model, const double *x, size_t n_rows,
                            size_t n_features, double *out);

/* Predicted classes of a classifier: n_rows indices for gkfda_class_label (the first
 * class of largest probability). */
int gkfda_predict(const gkfda_model *model, const double *x, size_t n_rows,
                  size_t n_features, size_t *out);

/* Features of a transformer: out holds n_rows x gkfda_n_outputs(model) doubles. */
int gkfda_transform(const gkfda_model *model, const double *x, size_t n_rows,
                    size_t n_features, double *out);

/* Classes of a classifier; 0 for other models or NULL. */
size_t gkfda_n_classes(const gkfda_model *model);

/* Values per input row (features; training samples for a precomputed kernel); 0 for NULL. */
size_t gkfda_n_features(const gkfda_model *model);

/* Decision values or features per row; 0 for NULL. */
size_t gkfda_n_outputs(const gkfda_model *model);

/* GKFDA_TASK_CLASSIFIER, _REGRESSOR or _TRANSFORMER; -1 for NULL. */
int gkfda_task(const gkfda_model *model);

/* The label of class i as text: a string label as it is (cut at a NUL), a number as its
 * JSON text, a boolean as "true" or "false". Valid as long as the model; NULL for a
 * NULL model or i >= gkfda_n_classes(model). */
const char *gkfda_class_label(const gkfda_model *model, size_t i);

/* The message of this thread's last failed call, "" after a success; never NULL. Valid
 * until the thread's next call into the library. */
const char *gkfda_last_error(void);

#ifdef __cplusplus
}
#endif

#endif /* GKFDA_H */
