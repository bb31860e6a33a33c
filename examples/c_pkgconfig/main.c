/* posenc from plain C99, linked against an installed libposenc.a through pkg-config:
 *
 *   cc -std=c99 main.c $(pkg-config --cflags --libs posenc) -o c_example
 *
 * Prints a small Vaswani table and shows that a refused call reports its status and leaves the output
 * as it was. Exits non-zero if anything differs from what the contract promises. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <posenc/posenc.h>

enum { D = 8, ROWS = 4 };

int main(void) {
  float pe[ROWS][D];
  posenc_spec spec = posenc_spec_default(D); /* interleaved s0 c0 s1 c1 ..., base 1e4 */
  posenc_status st = posenc_table_f32(&spec, 0, ROWS, &pe[0][0], D);
  if (st != POSENC_OK) {
    fprintf(stderr, "posenc_table_f32: %s\n", posenc_status_string(st));
    return 1;
  }
  printf("posenc %s, path %s\n", posenc_version(), posenc_isa_name(posenc_active_isa()));
  for (int r = 0; r < ROWS; ++r) {
    printf("PE(%d):", r);
    for (int c = 0; c < D; ++c) printf(" %+.6f", pe[r][c]);
    printf("\n");
  }
  /* Position 0 is sin 0 = 0, cos 0 = 1; pair 0 of position 1 is sin(1), cos(1) (frequency base^0 = 1). */
  int bad = pe[0][0] != 0.0f || pe[0][1] != 1.0f || pe[1][0] != (float)sin(1.0) || pe[1][1] != (float)cos(1.0);

  /* A base of 0 is refused before anything is written. */
  float before[ROWS][D];
  memcpy(before, pe, sizeof pe);
  posenc_spec broken = spec;
  broken.base = 0.0;
  st = posenc_table_f32(&broken, 0, ROWS, &pe[0][0], D);
  printf("base 0: %s\n", posenc_status_string(st));
  bad |= st != POSENC_ERR_INVALID || memcmp(before, pe, sizeof pe) != 0;

  if (bad) fprintf(stderr, "c_example: unexpected values\n");
  return bad;
}
