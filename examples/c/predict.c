/*
 * Predicts with a gkfda model file from C.
 *
 *     predict MODEL [CSV]
 *
 * Reads rows of comma-separated numbers from CSV (or, without it, uses three built-in
 * rows), and prints one line per row: the class probabilities of a classifier, the value
 * of a regressor or the features of a transformer, each as %.17g separated by spaces.
 * On an error, prints the library's message to stderr and exits with status 1.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gkfda.h"

static int fail(const char *what) {
    fprintf(stderr, "%s: %s\n", what, gkfda_last_error());
    return 1;
}

/* The numbers of path, n_features a row; the number of rows via *n_rows. */
static double *read_csv(const char *path, size_t n_features, size_t *n_rows) {
    FILE *file = fopen(path, "r");
    if (file == NULL) {
        perror(path);
        return NULL;
    }
    size_t capacity = 64 * n_features, count = 0;
    double *values = malloc(capacity * sizeof *values);
    double value;
    while (values != NULL && fscanf(file, " %lf ,", &value) == 1) {
        if (count == capacity) {
            capacity *= 2;
            double *larger = realloc(values, capacity * sizeof *values);
            if (larger == NULL) {
                free(values);
                values = NULL;
                break;
            }
            values = larger;
        }
        values[count++] = value;
    }
    fclose(file);
    if (values != NULL && count % n_features != 0) {
        fprintf(stderr, "%s: %zu values is not a whole number of rows of %zu\n", path, count,
                n_features);
        free(values);
        return NULL;
    }
    *n_rows = count / n_features;
    return values;
}

int main(int argc, char **argv) {
    if (argc < 2 || argc > 3) {
        fprintf(stderr, "usage: %s MODEL [CSV]\n", argv[0]);
        return 2;
    }
    gkfda_model *model = NULL;
    if (gkfda_model_load(argv[1], &model) != GKFDA_OK) {
        return fail(argv[1]);
    }
    size_t n_features = gkfda_n_features(model), n_rows = 3;
    double *x;
    if (argc == 3) {
        x = read_csv(argv[2], n_features, &n_rows);
    } else {
        x = malloc(n_rows * n_features * sizeof *x);
        for (size_t i = 0; x != NULL && i < n_rows * n_features; i++) {
            x[i] = (double)(i % 7) / 4.0 - 0.75;
        }
    }
    if (x == NULL) {
        gkfda_model_free(model);
        return 1;
    }
    int task = gkfda_task(model);
    size_t width = task == GKFDA_TASK_CLASSIFIER ? gkfda_n_classes(model) : gkfda_n_outputs(model);
    double *out = malloc((n_rows * width + 1) * sizeof *out);
    int status = GKFDA_ERROR_MEMORY;
    if (out != NULL) {
        if (task == GKFDA_TASK_CLASSIFIER) {
            status = gkfda_predict_proba(model, x, n_rows, n_features, out);
        } else if (task == GKFDA_TASK_REGRESSOR) {
            status = gkfda_decision_function(model, x, n_rows, n_features, out);
        } else {
            status = gkfda_transform(model, x, n_rows, n_features, out);
        }
    }
    if (status == GKFDA_OK) {
        if (task == GKFDA_TASK_CLASSIFIER) {
            printf("#");
            for (size_t c = 0; c < width; c++) {
                printf(" %s", gkfda_class_label(model, c));
            }
            printf("\n");
        }
        for (size_t i = 0; i < n_rows; i++) {
            for (size_t j = 0; j < width; j++) {
                printf(j == 0 ? "%.17g" : " %.17g", out[i * width + j]);
            }
            printf("\n");
        }
    } else if (out != NULL) {
        fail("prediction");
    } else {
        fprintf(stderr, "out of memory\n");
    }
    free(out);
    free(x);
    gkfda_model_free(model);
    return status == GKFDA_OK ? 0 : 1;
}
