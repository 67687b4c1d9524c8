"""The classifiers' results: the same keys from both commands (`summarize`, what --output_json
holds) and the table they print (`format_table`)."""
import numpy as np


def summarize(results, args, data, features_info=None):
    """The output JSON: the same keys from both commands. accuracy_std is the sample std (ddof=1).
    args: the settings to record ({flag: value})."""
    accuracies = [r['test_accuracy'] for r in results]
    return {
        'accuracy_mean': float(np.mean(accuracies)),
        'accuracy_std': float(np.std(accuracies, ddof=1)) if len(accuracies) > 1 else 0.0,
        'fold_accuracies': accuracies,
        'folds_run': [r['fold'] for r in results],
        'layer_weights': [r['layer_weights'] for r in results] if results[0]['layer_weights'] is not None else None,
        'args': dict(args),
        'fold_dev_accuracies': [r['dev_accuracy'] for r in results],
        'fold_best_epochs': [r['best_epoch'] for r in results],
        'fold_seconds': [r['seconds'] for r in results],
        'data': {'sources': data.sources, 'sentences': len(data.sentences), 'tokenizer': data.tokenizer, 'cut': data.cut},
        'features': features_info or {},
    }


def format_table(summary):
    lines = [f'{"fold":>4}  {"dev acc":>7}  {"test acc":>8}  {"best epoch":>10}  {"seconds":>8}']
    for k, dev, test, epoch, seconds in zip(summary['folds_run'], summary['fold_dev_accuracies'],
                                            summary['fold_accuracies'], summary['fold_best_epochs'],
                                            summary['fold_seconds']):
        lines.append(f'{k:>4}  {dev:>7.4f}  {test:>8.4f}  {epoch:>10}  {seconds:>8.1f}')
    n = len(summary['fold_accuracies'])
    lines.append(f'accuracy {summary["accuracy_mean"]:.4f} ± {summary["accuracy_std"]:.4f} '
                 f'({n} fold{"s" if n > 1 else ""}, mean ± sample std)')
    return '\n'.join(lines)
