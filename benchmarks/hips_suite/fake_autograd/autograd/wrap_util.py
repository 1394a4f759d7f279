"""``unary_to_nary``: turn an operator on unary functions into one taking ``argnum``."""

import functools


def unary_to_nary(unary_operator):
    @functools.wraps(unary_operator)
    def nary_operator(fun, argnum=0, *op_args, **op_kwargs):
        @functools.wraps(fun)
        def nary_f(*args, **kwargs):
            many = not isinstance(argnum, int)

            def unary_f(x):
                full = list(args)
                for i, v in (zip(argnum, x) if many else [(argnum, x)]):
                    full[i] = v
                return fun(*full, **kwargs)
            x = tuple(args[i] for i in argnum) if many else args[argnum]
            return unary_operator(unary_f, x, *op_args, **op_kwargs)
        return nary_f
    return nary_operator
